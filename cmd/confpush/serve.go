package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/zkconf/zkconf/internal/dashboard"
	"github.com/zkconf/zkconf/internal/errlist"
	"github.com/zkconf/zkconf/internal/httpguard"
	"github.com/zkconf/zkconf/internal/layout"
)

func (a *app) serveCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the read-only web dashboard (fleet, history, diffs)",
		Long: `serve runs a read-only web dashboard and its JSON API (docs/dashboard.md):
every root with metadata under --meta (or under --prefix), the fleet table of
each updating live through ZooKeeper watches (server-sent events), the
generation history, each generation's items and diffs, each agent's status.
One set of watches per root serves every browser. It never writes to
ZooKeeper: read access to the roots and their metadata is enough.

It listens on 127.0.0.1:8080 by default (loopback only); --tls-cert and
--tls-key serve HTTPS. Item contents may hold secrets: diffs show only names,
sizes, hashes and changed-line counts unless --show-content is given. The
dashboard has no authentication of its own: put it behind one before
listening beyond loopback.

It answers only requests whose Host is an IP address, localhost, this
machine's hostname, the --listen host or a name given with --allowed-host
(".example.com" allows the domain and every name below it): a web page
cannot re-point its own name at the dashboard (DNS rebinding) and read it.
Other requests get 421 Misdirected Request. A name a proxy or your browser
uses for the dashboard goes in --allowed-host.

It runs until SIGINT or SIGTERM (--timeout does not apply) and follows
ZooKeeper through restarts.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			return a.serve(ctx, cmd)
		},
	}
	f := cmd.Flags()
	f.String("listen", "127.0.0.1:8080", "address to listen on (host:port; port 0 picks a free one)")
	f.String("tls-cert", "", "PEM certificate to serve HTTPS with (with --tls-key)")
	f.String("tls-key", "", "PEM key of --tls-cert")
	f.Bool("show-content", false, "show item contents in diffs (they may hold secrets)")
	f.String("prefix", "", "show only this root and the roots below it (default: every root)")
	f.StringSlice("allowed-host", nil, "also answer requests for this Host name (repeatable; .example.com: the domain and every name below it; * any)")
	return cmd
}

func (a *app) serve(ctx context.Context, cmd *cobra.Command) error {
	f := cmd.Flags()
	listen, _ := f.GetString("listen")
	certFile, _ := f.GetString("tls-cert")
	keyFile, _ := f.GetString("tls-key")
	showContent, _ := f.GetBool("show-content")
	prefix, _ := f.GetString("prefix")
	allowed, _ := f.GetStringSlice("allowed-host")
	// Every flag is checked, and the port taken, before ZooKeeper is
	// dialled; every problem is reported at once.
	var problems []error
	if (certFile == "") != (keyFile == "") {
		problems = append(problems, errors.New("--tls-cert and --tls-key go together"))
	}
	if prefix != "" {
		if err := layout.ValidateRoot(prefix); err != nil {
			problems = append(problems, fmt.Errorf("--prefix: %w", err))
		}
	}
	for _, h := range allowed {
		if err := httpguard.ValidateAllowed([]string{h}); err != nil {
			problems = append(problems, fmt.Errorf("--allowed-host: %w", err))
		}
	}
	hs := &http.Server{ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	scheme := "http"
	if certFile != "" && keyFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			problems = append(problems, fmt.Errorf("--tls-cert/--tls-key: %w", err))
		}
		hs.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		scheme = "https"
	}
	if len(problems) > 0 {
		return usageError{errlist.Join(problems...)}
	}
	l, err := net.Listen("tcp", listen)
	if err != nil {
		return usagef("--listen: %v", err)
	}
	defer l.Close()
	cl, err := a.dial(ctx)
	if err != nil {
		return err
	}
	defer cl.Conn().Close()
	srv, err := dashboard.New(ctx, dashboard.Options{Client: cl, Meta: a.v.GetString("meta"), Prefix: prefix,
		ShowContent: showContent, Log: a.log, Listen: listen, AllowedHosts: allowed})
	if err != nil {
		return err
	}
	hs.Handler = srv.Handler()
	_, _ = fmt.Fprintf(a.stderr, "confpush serve: dashboard on %s://%s/\n", scheme, l.Addr())
	done := make(chan error, 1)
	go func() {
		if hs.TLSConfig != nil {
			done <- hs.ServeTLS(l, "", "")
		} else {
			done <- hs.Serve(l)
		}
	}()
	select {
	case err := <-done:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	shut, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	// Event streams never end on their own: close what Shutdown has not.
	if err := hs.Shutdown(shut); err != nil {
		_ = hs.Close()
	}
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}
