// Command library is an application that embeds the zkconf cache: it reads
// one configuration value, reacts when a new generation is published, and
// pauses its work while the cache is not Live (Stale or Expired).
//
//	go run ./examples/library --zk 127.0.0.1:2181 --root /config --key greeting
//
// See README.md beside this file.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/zkconf/zkconf/cache"
	"github.com/zkconf/zkconf/manifest"
	"github.com/zkconf/zkconf/zkclient"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "library:", err)
		os.Exit(1)
	}
}

func run() error {
	zkServers := flag.String("zk", "127.0.0.1:2181", "ZooKeeper servers, comma-separated host:port")
	root := flag.String("root", "/config", "config root to follow")
	key := flag.String("key", "greeting", "item whose value the application uses")
	stateFile := flag.String("state", "", "state file: start from the last good config when ZooKeeper is down (optional)")
	session := flag.Duration("session-timeout", 10*time.Second, "ZooKeeper session timeout")
	every := flag.Duration("every", 2*time.Second, "how often the application does a unit of work")
	flag.Parse()

	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	// The cache dials its own connection with this configuration (TLS
	// and digest credentials go here too) and owns it: it carries on over
	// session expiries and replaces a connection the servers refuse.
	zkConfig := zkclient.Config{Servers: strings.Split(*zkServers, ","), SessionTimeout: *session, Logger: log}
	if err := zkConfig.Validate(); err != nil {
		return err
	}
	opts := []cache.Option{cache.WithConfig(zkConfig), cache.WithLogger(log)}
	if *stateFile != "" {
		opts = append(opts, cache.WithStateFile(*stateFile))
	}
	c, err := cache.New(ctx, *root, opts...)
	if err != nil {
		return err
	}
	defer c.Close()

	// The first snapshot: from the state file at once, or from ZooKeeper.
	log.Info("waiting for the configuration", "root", *root)
	snap, err := c.Wait(ctx, 1)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return nil
		}
		return err
	}
	value := use(log, snap, *key)
	applied := snap

	st := c.State()
	tick := time.NewTicker(*every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			log.Info("shutting down")
			return nil

		case s := <-c.Updates():
			// Latest value only: after a burst of publishes we get the
			// newest snapshot, never a backlog; never the one Wait
			// returned above either, so each generation is used once.
			value, applied = use(log, s, *key), s

		case st = <-c.StateChanges():
			switch st.State {
			case cache.StateLive:
				log.Info("configuration is live; working", "generation", st.Generation)
			case cache.StateExpired:
				// This application holds nothing else on the session, so
				// it only pauses; one holding locks or ephemeral nodes on
				// the same connection would release its work here.
				log.Warn("ZooKeeper session expired; pausing work", "since", st.Since)
			default:
				if needsOperator(st.Err) {
					log.Error("configuration is stuck until someone acts; pausing work", "state", st.State, "reason", st.Err, "since", st.Since)
				} else {
					log.Warn("configuration may be stale; pausing work", "state", st.State, "reason", st.Err, "since", st.Since)
				}
			}

		case <-tick.C:
			if st.State != cache.StateLive {
				continue // paused: do not act on a configuration that may be old
			}
			// A unit of work, fenced by the generation's commit zxid.
			fmt.Printf("working with %s=%q (generation %d, zxid 0x%x)\n", *key, value, applied.Generation(), applied.Zxid())
		}
	}
}

// needsOperator reports whether a cache that is not Live stays so until
// someone acts, as opposed to a disconnection, a resync or a publish in
// progress, which end by themselves. The cache keeps serving its last good
// snapshot in every case.
func needsOperator(err error) bool {
	var refused *cache.IncarnationError
	switch {
	case errors.As(err, &refused):
		// ZooKeeper was wiped or rebuilt and published anew; this
		// application refuses the new history until c.Adopt is called
		// (only with cache.WithIncarnationPolicy(cache.IncarnationRefuse)).
		return true
	case errors.Is(err, cache.ErrAbandonedMarker), errors.Is(err, manifest.ErrTorn):
		// A publisher died mid-publish, or an item was changed by hand:
		// the next publish repairs the root.
		return true
	case errors.Is(err, manifest.ErrForeign), errors.Is(err, manifest.ErrFutureFormat):
		// The root holds something this version cannot read.
		return true
	case errors.Is(err, zkclient.ErrAuthFailed), errors.Is(err, cache.ErrRootMissing),
		errors.Is(err, cache.ErrNotPublished):
		return true
	default:
		return false
	}
}

// use reads the application's value from a snapshot. Snapshots are
// immutable and their bytes shared: copy before modifying.
func use(log *slog.Logger, s *cache.Snapshot, key string) string {
	b, ok := s.Get(key)
	if !ok {
		log.Warn("configuration has no such item; using the default", "item", key, "generation", s.Generation(), "items", s.Len())
		return "hello"
	}
	log.Info("configuration applied", "generation", s.Generation(), "published_at", s.PublishedAt(), "from_state_file", s.FromStateFile())
	return string(b)
}
