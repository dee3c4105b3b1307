package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/zkconf/zkconf/internal/errlist"
	"github.com/zkconf/zkconf/publish"
)

// inputFlags registers the flags that say how a directory is read
// (publish, diff, watch) besides --flatten.
func inputFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.Bool("follow-external-symlinks", false, "read symbolic links in DIR whose target resolves outside DIR (refused by default: a link to /etc/shadow would publish that file to every host)")
	f.StringArray("ignore", nil, "skip entries of DIR matching this glob (repeatable): by name at every level, or by path relative to DIR when it has a '/'; added to the default patterns")
	f.Bool("no-default-ignore", false, "do not skip the editor and tool leftovers skipped by default ("+strings.Join(publish.DefaultIgnore(), " ")+")")
}

// loadOptions is how the command reads a directory, from its flags.
func (a *app) loadOptions() publish.LoadOptions {
	return publish.LoadOptions{Flatten: a.v.GetBool("flatten"), FollowExternalSymlinks: a.v.GetBool("follow-external-symlinks"),
		Ignore: a.v.GetStringSlice("ignore"), NoDefaultIgnore: a.v.GetBool("no-default-ignore")}
}

// loadInput reads DIR (a single directory argument) or FILES and validates
// them; every problem is reported at once, before anything connects. It
// returns the entries of DIR an ignore pattern skipped (FILEs are read as
// named: no pattern applies to them) and its sub-directories without
// items (not published: a directory is not an item).
func loadInput(args []string, opts publish.LoadOptions, syntax, allowEmpty bool) (items map[string][]byte, ignored, emptyDirs []string, err error) {
	loadErr := publish.CheckIgnore(opts)
	isDir := false
	if len(args) == 1 {
		st, err := os.Stat(args[0])
		isDir = err == nil && st.IsDir()
	}
	switch {
	case isDir && loadErr == nil:
		var c publish.DirContents
		c, loadErr = publish.LoadDirContents(args[0], opts)
		items, ignored, emptyDirs = c.Items, c.Ignored, c.EmptyDirs
	case !isDir:
		var err error
		items, err = publish.LoadFiles(args)
		loadErr = errlist.Join(loadErr, err)
	}
	// An empty set caused by unreadable files is not a problem of its own.
	vErr := publish.Validate(items, publish.ValidateOptions{AllowEmpty: allowEmpty || loadErr != nil, Syntax: syntax})
	if err := errlist.Join(loadErr, vErr); err != nil {
		return nil, nil, nil, err
	}
	return items, ignored, emptyDirs, nil
}

// ignoredLine says which entries of a directory were skipped, and which
// of its sub-directories hold no item.
func ignoredLine(w io.Writer, ignored, emptyDirs []string) {
	if len(ignored) > 0 {
		fmt.Fprintf(w, "ignored %d file(s) matching the ignore patterns (--ignore, --no-default-ignore): %s\n", len(ignored), strings.Join(ignored, ", "))
	}
	if len(emptyDirs) > 0 {
		fmt.Fprintf(w, "note: %d directory(ies) hold no item and are not published (a directory is not an item): %s\n", len(emptyDirs), strings.Join(emptyDirs, ", "))
	}
}
