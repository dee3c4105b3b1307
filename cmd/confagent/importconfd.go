package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/zkconf/zkconf/cmd/internal/config"
)

type importConfdFlags struct {
	out, prefix, root string
	force             bool
}

// importConfdCommand is `confagent import-confd`: confd's template
// resources as confagent targets.
func importConfdCommand(stdout, stderr io.Writer, code *int) *cobra.Command {
	var f importConfdFlags
	cmd := &cobra.Command{
		Use:   "import-confd CONFDIR",
		Short: "Convert confd's template resources (CONFDIR/conf.d/*.toml) into confagent targets",
		Long: `import-confd reads a confd configuration directory as confd does (every file
named *toml below CONFDIR/conf.d, templates in CONFDIR/templates) and writes
the equivalent confagent configuration: the root and one template target of
syntax confd per resource, which renders the resource's template with confd's
functions over the keys its prefix and keys select, byte for byte as confd
renders it. Every field it cannot honour is reported, naming the resource
file and the field, why and what to do, and then nothing is written (exit 3).
Fields taken as they are that still deserve a look (owner, which confd does
not read; a uid no user has) are printed as warnings.

--prefix is the -prefix confd runs with (default: the prefix of
CONFDIR/confd.toml, if it sets one): as in confd it replaces every resource's
prefix. --root is the zkconf root the agent follows (default: that prefix):
every key a resource reads must be the root or below it. Keys are ZooKeeper
paths, as confd's: the item "host" of root /myapp is the key /myapp/host, so a
confd that ran with -prefix /myapp renders the same from root /myapp.

confagent can also read CONFDIR itself (confd_dir and confd_prefix in its
configuration); this command shows what it takes.

Exit codes: 0 converted (warnings are printed to stderr), 1 --out could not
be written, 2 bad arguments, 3 a resource cannot be honoured.`,
		Example: `  # what confagent makes of /etc/confd (confd ran with -prefix /myapp)
  confagent import-confd /etc/confd --prefix /myapp
  # write it to a file, to merge into /etc/confagent/confagent.yaml
  confagent import-confd /etc/confd --prefix /myapp --out /tmp/confd-targets.yaml`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			*code = importConfd(args[0], f, cmd.Flags().Changed("prefix"), stdout, stderr)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.prefix, "prefix", "", "the -prefix confd runs with (default: CONFDIR/confd.toml's prefix; none if it sets none)")
	fl.StringVar(&f.root, "root", "", "the zkconf root the agent follows (default: the prefix)")
	fl.StringVar(&f.out, "out", "", "write the configuration to this file instead of stdout")
	fl.BoolVar(&f.force, "force", false, "with --out: replace the file if it exists")
	return cmd
}

func importConfd(dir string, f importConfdFlags, prefixSet bool, stdout, stderr io.Writer) int {
	prefix := f.prefix
	if !prefixSet {
		p, set, err := config.ConfdTOMLPrefix(dir)
		if err != nil {
			fmt.Fprintf(stderr, "confagent import-confd: %v\n", err)
			return exitUsage
		}
		if set {
			prefix = p
			fmt.Fprintf(stderr, "confd's prefix %s, from %s\n", p, filepath.Join(dir, "confd.toml"))
		}
	}
	root := f.root
	if root == "" {
		if prefix == "" {
			fmt.Fprintln(stderr, "confagent import-confd: --root is required when confd runs without a prefix: the zkconf root whose items the resources read")
			return exitUsage
		}
		root = prefix
	}
	if f.out != "" && !f.force {
		if _, err := os.Lstat(f.out); !errors.Is(err, fs.ErrNotExist) {
			fmt.Fprintf(stderr, "confagent import-confd: --out %s exists: choose another file, or --force to replace it\n", f.out)
			return exitUsage
		}
	}
	imp, err := config.ImportConfd(dir, prefix, root)
	if imp != nil {
		for _, w := range imp.Warnings {
			fmt.Fprintf(stderr, "warning: %s\n", w)
		}
	}
	if err != nil {
		printConfigErr(stderr, dir, err)
		return exitConfig
	}
	b, err := imp.YAML()
	if err != nil {
		fmt.Fprintf(stderr, "confagent import-confd: %v\n", err)
		return exitError
	}
	if f.out == "" {
		_, _ = stdout.Write(b)
		return exitOK
	}
	if err := writeFileAtomic(f.out, b); err != nil {
		fmt.Fprintf(stderr, "confagent import-confd: --out: %v\n", err)
		return exitError
	}
	fmt.Fprintf(stderr, "%d targets written to %s\n", len(imp.Targets), f.out)
	return exitOK
}

// writeFileAtomic replaces name with data (a temporary file beside it,
// renamed), 0644: a reader never sees half of it.
func writeFileAtomic(name string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(name), "."+filepath.Base(name)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(tmp.Name(), name)
}
