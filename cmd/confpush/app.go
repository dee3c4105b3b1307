package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/zkconf/zkconf/cmd/confpush/internal/access"
	"github.com/zkconf/zkconf/fleet"
	"github.com/zkconf/zkconf/internal/layout"
	"github.com/zkconf/zkconf/manifest"
	"github.com/zkconf/zkconf/publish"
	"github.com/zkconf/zkconf/rollout"
	"github.com/zkconf/zkconf/zkclient"
)

// Exit codes.
const (
	exitOK         = 0 // success, including "unchanged"
	exitError      = 1 // any other failure (ZooKeeper unreachable, outcome unknown, ...)
	exitUsage      = 2 // bad command line, flags, configuration or input
	exitConflict   = 3 // lost the compare-and-swap, or --expect-generation mismatch
	exitMarkerBusy = 4 // another live marker-mode publish holds the root, or a canary rollout is in progress
	exitRollout    = 5 // --wait: the rollout did not complete
	exitPermission = 6 // ZooKeeper refused the request: identity or ACL
	exitACL        = 7 // acl: the ACLs or quotas differ from the policy (without --repair), or an open root
	exitFailing    = 8 // status --fail-on-error: an agent reports an error or a failing target
	// exitAborted (9, rolloutdrive.go): publish --auto aborted the rollout.
	exitDiffers = 10 // diff --exit-code: there are differences
)

const exitCodesHelp = `Exit codes:
  0  success (including "unchanged": nothing to publish)
  1  error (ZooKeeper unreachable, session expired, outcome unknown, ...)
  2  usage or bad input (flags, arguments, configuration, files, names, sizes, item syntax,
     a --root that does not exist for status and rollout status)
  3  conflict: another publish won, or the live generation is not --expect-generation
  4  marker busy: another marker-mode publish is in progress (see --override-marker),
     or a canary rollout (see --supersede and 'confpush rollout')
  5  rollout incomplete: with --wait, agents failed, left or did not apply in time
  6  permission denied: the ZooKeeper identity in use (--auth-file, $ZKCONF_AUTH)
     lacks a permission, or its password is wrong (never retried)
  7  acl: ACLs or quotas differ from the policy (run 'confpush acl --repair'),
     or the root is open (confpush init never ran)
  8  status --fail-on-error: an agent reports an error or a failing target
  9  publish --auto/--steps: the driver aborted the canary (an agent failed on it)
  10 diff --exit-code: there are differences (the diff is printed as without it)`

// usageError marks an error as the user's (exit 2).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// app is one invocation of confpush; it holds no state beyond the run.
type app struct {
	stdout, stderr io.Writer
	v              *viper.Viper
	ran            bool // a command started: later errors are not cobra's
	log            *slog.Logger
	// auth is the digest credentials ("user:password") of --auth-file or
	// $ZKCONF_AUTH ("" for none); tls the client TLS configuration (nil
	// for plain connections). Loaded once by configure.
	auth string
	tls  *tls.Config
	// holdJSON keeps the next emitted object in held instead of printing
	// it, so that publish --wait --json prints one object holding the
	// result and the rollout; rollout is the last rollout wait's final
	// progress.
	holdJSON bool
	held     map[string]any
	rollout  *fleet.Progress
	// ignored lists the entries of the directory read (publish, diff)
	// that an ignore pattern skipped, reported with the result.
	ignored []string
	// emptyDirs lists the sub-directories of the directory read that
	// hold no item.
	emptyDirs []string
	// prefetch, when not nil, is the set the command publishes: connect
	// sends the publish's first reads with the access probe's
	// (Publisher.Prefetch).
	prefetch map[string][]byte
	// early, when not nil, is the session startDial began dialing:
	// session (through connect) takes it instead of dialing.
	early *earlyDial
	// publishOnly is set when the command tree holds the publish command
	// alone (commandTree).
	publishOnly bool
}

// run executes confpush with args and returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	return runIO(args, os.Stdin, stdout, stderr)
}

// runIO is run with standard input (confpush digest reads it).
func runIO(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	a := newApp(stdout, stderr)
	return a.execute(a.commandTree(args), args, stdin)
}

// newApp is an invocation writing to stdout and stderr.
func newApp(stdout, stderr io.Writer) *app {
	return &app{stdout: stdout, stderr: stderr, v: viper.New(), log: slog.New(slog.DiscardHandler)}
}

// execute runs args on root, a's command tree, and returns the exit code.
func (a *app) execute(root *cobra.Command, args []string, stdin io.Reader) int {
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	err := root.Execute()
	if err == nil {
		return exitOK
	}
	if !a.ran {
		// cobra refused the command line before configure ran: honour
		// --json (and CONFPUSH_JSON) for the error all the same.
		a.v.SetEnvPrefix("CONFPUSH")
		a.v.AutomaticEnv()
		_ = a.v.BindPFlag("json", root.PersistentFlags().Lookup("json"))
		err = usageError{err}
	}
	return a.fail(err)
}

// rootCommand is confpush's whole command tree.
func (a *app) rootCommand() *cobra.Command {
	root := a.bareRoot()
	a.addCommands(root, a.commands())
	return root
}

// commandTree is the command tree args run on: the whole tree, but for a
// plain publish (plainPublish) the root with the publish command alone.
// Building every command's flags, examples and completions is most of the
// command line's cost before a publish dials (about a third of a
// millisecond of CPU and 40 page faults of a start on the project's 2-core
// machine; docs/bench/latency-pushinit-2026-11-27b/notes.md), and a
// publish runs on none of the other commands. The publish command, the
// root and what addCommands gives them are built by the same code either
// way, so its flags, help, errors and exit codes are the same; the one use
// of the other commands, the configuration file's keys, needs the whole
// tree: a publish naming a file (--config, CONFPUSH_CONFIG) gets it at
// once, and configure builds it for a file named otherwise.
func (a *app) commandTree(args []string) *cobra.Command {
	root := a.bareRoot()
	if plainPublish(args, root.PersistentFlags()) && !namesConfigFile(args) {
		a.publishOnly = true
		a.addCommands(root, []*cobra.Command{a.publishCommand()})
		return root
	}
	a.addCommands(root, a.commands())
	return root
}

// plainPublish reports whether args run the publish command with nothing
// before it but the root's own flags, and ask for no help: the arguments
// commandTree needs no other command for. Anything else (another command,
// a flag it does not know, a shorthand, --help or -h anywhere) is left to
// the whole tree, so that cobra's answer stays its own.
func plainPublish(args []string, rootFlags *pflag.FlagSet) bool {
	for i := 0; i < len(args); i++ {
		name, isFlag := strings.CutPrefix(args[i], "--")
		if !isFlag {
			if args[i] != "publish" {
				return false
			}
			for _, rest := range args[i+1:] {
				if rest == "-h" || rest == "--help" || strings.HasPrefix(rest, "--help=") {
					return false
				}
			}
			return true
		}
		name, _, inline := strings.Cut(name, "=")
		f := rootFlags.Lookup(name)
		if f == nil {
			return false
		}
		if !inline && f.NoOptDefVal == "" {
			i++ // the flag's value is the next argument
		}
	}
	return false
}

// namesConfigFile reports whether args or the environment may name a
// configuration file.
func namesConfigFile(args []string) bool {
	if os.Getenv("CONFPUSH_CONFIG") != "" {
		return true
	}
	return slices.ContainsFunc(args, func(arg string) bool { return arg == "--config" || strings.HasPrefix(arg, "--config=") })
}

// commands are confpush's commands, each built anew.
func (a *app) commands() []*cobra.Command {
	return []*cobra.Command{a.publishCommand(), a.diffCommand(), a.getCommand(), a.historyCommand(), a.rollbackCommand(),
		a.statusCommand(), a.watchCommand(), a.initCommand(), a.aclCommand(), a.digestCommand(), a.forgetCommand(),
		a.rolloutCommand(), a.putCommand(), a.deleteCommand(), a.serveCommand(), a.importCommand()}
}

// bareRoot is the root command with its persistent flags and no command.
func (a *app) bareRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "confpush",
		Short: "Publish config sets to ZooKeeper atomically",
		Long: `confpush publishes a directory (or a list of files) as one config set to a
ZooKeeper root, atomically: agents see the old set or the new one, never a mix.
Every publish is a new generation; history is kept for rollback.

Settings come from flags, then CONFPUSH_* environment variables (CONFPUSH_ZK,
CONFPUSH_ROOT, CONFPUSH_SESSION_TIMEOUT, ...), then the --config YAML file,
then the defaults. The file uses confagent's names for what both tools share
(zookeeper.servers, zookeeper.session_timeout, zookeeper.connect_timeout,
zookeeper.auth_file, zookeeper.tls.ca_file/cert_file/key_file/server_name,
log.level, root, meta) and flag names for the rest (timeout, json, ...); the
old flag-named keys (zk, session-timeout, ...) are deprecated aliases. Unknown
keys are refused.

` + exitCodesHelp,
		SilenceErrors: true,
		SilenceUsage:  true,
		Args:          cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_ = cmd.Help()
			return usagef("a command is required")
		},
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error { return a.configure(cmd) },
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	pf := root.PersistentFlags()
	pf.String("zk", "127.0.0.1:2181", "ZooKeeper servers, host:port,...")
	pf.String("root", layout.DefaultRoot, "config root znode")
	pf.String("meta", layout.DefaultMeta, "metadata znode (history, blobs)")
	pf.Duration("session-timeout", 10*time.Second, "ZooKeeper session timeout")
	pf.Duration("timeout", 60*time.Second, "overall timeout of the command")
	pf.Duration("connect-timeout", defaultConnectTimeout, "how long to wait for a ZooKeeper session before naming each server's problem")
	pf.String("config", "", "YAML configuration file")
	pf.Bool("json", false, "print one JSON object (machine output)")
	pf.String("log-level", "warn", "log level on stderr: debug, info, warn, error")
	pf.String("auth-file", "", "file holding the ZooKeeper digest credentials user:password (mode 0600; default $ZKCONF_AUTH)")
	pf.String("tls-ca-file", "", "PEM CA certificates of the ZooKeeper servers: turns TLS on (secureClientPort)")
	pf.String("tls-cert-file", "", "PEM client certificate for mutual TLS (with --tls-key-file)")
	pf.String("tls-key-file", "", "PEM client key for mutual TLS (with --tls-cert-file)")
	pf.String("tls-server-name", "", "name verified in the servers' certificates (default: each server's host name)")
	return root
}

// addCommands adds cmds to root, then gives the tree what every command
// needs beyond its own behaviour (conventions and the rest).
func (a *app) addCommands(root *cobra.Command, cmds []*cobra.Command) {
	root.AddCommand(cmds...)
	for _, c := range root.Commands() {
		c.Long = strings.TrimSpace(c.Long) + "\n\n" + exitCodesPointer
	}
	a.conventions(root)
	a.strictSubcommands(root)
	a.openRootFlags(root)
}

// configure reads the configuration file and binds the flags of the
// command that runs (only that command's, so subcommands sharing a flag
// name do not interfere) to viper, with environment variables.
func (a *app) configure(cmd *cobra.Command) error {
	a.ran = true
	v := a.v
	v.SetEnvPrefix("CONFPUSH")
	v.SetEnvKeyReplacer(strings.NewReplacer("-", "_"))
	v.AutomaticEnv()
	var bindErr error
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if err := v.BindPFlag(f.Name, f); err != nil && bindErr == nil {
			bindErr = err
		}
	})
	if bindErr != nil {
		return bindErr
	}
	var deprecated []string
	if path := v.GetString("config"); path != "" {
		var err error
		flags := flagNames(cmd.Root())
		if a.publishOnly {
			// The file's keys are every command's flags, not only the
			// ones of the tree built for this publish (commandTree:
			// a file named in a way it did not see).
			flags = mergeNames(flags, flagNames(newApp(a.stdout, a.stderr).rootCommand()))
		}
		if deprecated, err = readConfigFile(v, flags, path); err != nil {
			return err
		}
	}
	level := slog.LevelWarn
	if err := level.UnmarshalText([]byte(v.GetString("log-level"))); err != nil {
		return usagef("--log-level %q: want debug, info, warn or error", v.GetString("log-level"))
	}
	a.log = slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: level}))
	if len(deprecated) > 0 {
		a.log.Warn("the configuration file uses deprecated key names", "file", v.GetString("config"), "keys", strings.Join(deprecated, ", "))
	}
	if v.GetDuration("timeout") <= 0 {
		return usagef("--timeout must be positive")
	}
	if v.GetDuration("connect-timeout") <= 0 {
		return usagef("--connect-timeout must be positive")
	}
	if v.GetDuration("session-timeout") <= 0 {
		return usagef("--session-timeout must be positive")
	}
	if err := layout.ValidateRoot(v.GetString("root")); err != nil {
		return usagef("--root: %v", err)
	}
	if err := layout.ValidateRoot(v.GetString("meta")); err != nil {
		return usagef("--meta: %v", err)
	}
	if err := a.zkConfig().Validate(); err != nil {
		return usagef("--zk: %v", err)
	}
	auth, err := zkclient.LoadAuth(v.GetString("auth-file"))
	if err != nil {
		return usagef("credentials: %v", err)
	}
	a.auth = auth
	files := zkclient.TLSFiles{CAFile: v.GetString("tls-ca-file"), CertFile: v.GetString("tls-cert-file"),
		KeyFile: v.GetString("tls-key-file"), ServerName: v.GetString("tls-server-name")}
	if files != (zkclient.TLSFiles{}) {
		if files.CAFile == "" {
			return usagef("--tls-ca-file is required with the other --tls-* flags")
		}
		if a.tls, err = files.Load(); err != nil {
			return usagef("TLS: %v", err)
		}
	}
	return nil
}

func (a *app) zkConfig() zkclient.Config {
	var servers []string
	for _, s := range strings.Split(a.v.GetString("zk"), ",") {
		if s = strings.TrimSpace(s); s != "" {
			servers = append(servers, s)
		}
	}
	return zkclient.Config{Servers: servers, SessionTimeout: a.v.GetDuration("session-timeout"), Logger: a.log,
		Auth: a.auth, TLS: a.tls}
}

// context is the command's overall deadline.
func (a *app) context(cmd *cobra.Command) (context.Context, context.CancelFunc) {
	return context.WithTimeout(cmd.Context(), a.v.GetDuration("timeout"))
}

// session starts a command that needs the publisher: the command's
// deadline, a connected Publisher, the client it uses (for the reads that
// are not the Publisher's: the fleet, the raw history), and one function
// releasing them.
//
// A command that dialed early (startDial) and prefetches (publish) queues
// its first reads (connectOn's) on the connection as soon as it is open,
// before its session is established: the client sends them right behind
// the session's creation, instead of after this goroutine has woken up to
// the session and started them (on a busy 2-core machine 1–2 ms, and the
// reads' own goroutines later still; docs/bench/latency-pushlean-2026-11-27).
// They are reads, queued only once the input passed every check, and the
// credentials are added before the connection is handed out
// (zkclient.DialConn), so nothing goes out earlier or otherwise than it
// did, only sooner.
func (a *app) session(cmd *cobra.Command) (context.Context, *publish.Publisher, *zkclient.Client, func(), error) {
	var ctx context.Context
	var cancel context.CancelFunc
	var dialed *zkclient.Client
	var dialErr error
	var pc *pendingConnect
	if d := a.early; d != nil {
		a.early = nil
		if conn, sess := d.opening(); conn != nil && a.prefetch != nil {
			pc = a.startConnect(d.ctx, zkclient.Fixed(conn, sess), publishes(cmd), d.done)
		}
		ctx, cancel, dialed, dialErr = d.take()
	} else {
		ctx, cancel = a.context(cmd)
		dialed, dialErr = a.dial(ctx)
	}
	if dialErr != nil {
		// The dial closed the connection: the reads queued on it end.
		cancel()
		pc.abandon()
		return nil, nil, nil, nil, dialErr
	}
	if pc == nil {
		pc = a.startConnect(ctx, dialed, publishes(cmd), nil)
	}
	p, cl, err := pc.finish()
	if err != nil {
		cancel()
		return nil, nil, nil, nil, err
	}
	return ctx, p, cl, func() { cl.Conn().Close(); cancel() }, nil
}

// connect dials ZooKeeper, waits for a session, checks that its
// credentials work for a publisher (access.Probe: a wrong password is
// otherwise only noticed at the first refused request), and returns a
// Publisher for the configured root and its client (close it with
// cl.Conn().Close()). With warnOpen it also warns about an open root
// (warnOpenRoot), once the probe passed; its read is in flight with the
// probe's.
func (a *app) connect(ctx context.Context, warnOpen bool) (*publish.Publisher, *zkclient.Client, error) {
	cl, err := a.dial(ctx)
	if err != nil {
		return nil, nil, err
	}
	return a.connectOn(ctx, cl, warnOpen)
}

// connectOn is connect on a client already dialed (a.dial, startDial): it
// closes cl when it fails.
func (a *app) connectOn(ctx context.Context, cl *zkclient.Client, warnOpen bool) (*publish.Publisher, *zkclient.Client, error) {
	return a.startConnect(ctx, cl, warnOpen, nil).finish()
}

// pendingConnect is connectOn's reads in flight (startConnect).
type pendingConnect struct {
	a       *app
	cl      *zkclient.Client
	warning <-chan string
	probe   chan error
	p       *publish.Publisher
	perr    error
}

// startConnect sends connectOn's reads on cl and returns at once: the
// open-root check (with warnOpen), the access probe and, for a command
// that prefetches, the publish's first reads (Publisher.Prefetch), all in
// flight together; the publish starts (and writes) only once the probe
// passed (finish).
//
// A check whose read was answered with a lost connection
// (zkclient.IsRecoverable) is made again (againWhileLost): a lost connection is not
// the probe's verdict, nor a reason to drop the open-root warning. Two
// causes are expected: a connection attempt that failed before the
// session (the client gives the requests it holds back), and a ZooKeeper
// older than 3.6, which closes the connection after refusing the
// prefetch's multiRead (Publisher.Prefetch), whatever else is in flight.
// sessionUp is nil when cl's session is established; otherwise it closes
// once the dial ended (established, or failed and cl closed), and the
// second read waits for it. The prefetched reads retry on their own, and
// a publish reads again what they could not.
func (a *app) startConnect(ctx context.Context, cl *zkclient.Client, warnOpen bool, sessionUp <-chan struct{}) *pendingConnect {
	pc := &pendingConnect{a: a, cl: cl, probe: make(chan error, 1)}
	pc.p, pc.perr = a.publisher(cl)
	if pc.perr == nil && a.prefetch != nil {
		pc.p.Prefetch(ctx, a.prefetch)
		// The prefetch reads the root's and the history parent's ACLs
		// (to copy them), which are the probe's two reads and the
		// open-root check's: both take its answers instead of sending
		// the same requests again (3 of a publish's 11 reads).
		if warnOpen {
			pc.warning = a.openRootFrom(ctx, pc.p, cl.Conn(), sessionUp)
		}
		go func() {
			if acls, ok := pc.p.PrefetchACLs(ctx); ok {
				pc.probe <- probeVerdict(ctx, acls.Err)
				return
			}
			pc.probe <- a.probe(ctx, cl, sessionUp)
		}()
		return pc
	}
	if warnOpen {
		pc.warning = a.checkOpenRoot(ctx, cl.Conn(), sessionUp)
	}
	go func() { pc.probe <- a.probe(ctx, cl, sessionUp) }()
	return pc
}

// probe is the access probe's own reads (access.Probe for a publisher),
// made again while the connection is lost (againWhileLost).
func (a *app) probe(ctx context.Context, cl *zkclient.Client, sessionUp <-chan struct{}) error {
	_, err := againWhileLost(ctx, sessionUp, func() (struct{}, error) {
		return struct{}{}, access.Probe(ctx, cl.Conn(), a.paths(), access.RolePublisher)
	})
	return err
}

// probeVerdict is access.Probe's verdict for a publisher on the answers of
// its two reads as a prefetch made them (publish.PrefetchedACLs.Err: the
// same zkclient.ReadACL reads of the root and the history parent, a
// missing node allowed, the root's error first): the error as it is, or
// ctx's when it ended.
func probeVerdict(ctx context.Context, err error) error {
	if err != nil {
		return err
	}
	return ctx.Err()
}

// finish waits for the probe (and the open-root check, whose warning it
// prints once the probe passed) and returns the Publisher; it closes the
// connection when it fails.
func (pc *pendingConnect) finish() (*publish.Publisher, *zkclient.Client, error) {
	err := <-pc.probe
	if pc.warning != nil {
		if w := <-pc.warning; err == nil {
			pc.a.printOpenRoot(w)
		}
	}
	if err == nil {
		err = pc.perr
	}
	if err != nil {
		pc.cl.Conn().Close()
		return nil, nil, err
	}
	return pc.p, pc.cl, nil
}

// abandon waits for the checks of a connection the dial failed on (and
// closed) to end, reporting nothing; nil does nothing.
func (pc *pendingConnect) abandon() {
	if pc == nil {
		return
	}
	<-pc.probe
	if pc.warning != nil {
		<-pc.warning
	}
}

// json reports whether machine output was asked for.
func (a *app) json() bool { return a.v.GetBool("json") }

// emit prints obj as one JSON object, or what text writes, in one write.
func (a *app) emit(obj map[string]any, text func(w io.Writer)) {
	if a.json() {
		obj["ok"] = true
		if a.holdJSON {
			a.held = obj
			return
		}
		a.writeJSON(obj)
		return
	}
	// The text goes out in one write: printed straight to stdout, each
	// line was a write(2) of its own (a publish of 100 changed items
	// printed 102, after its acknowledgement and before the session's
	// close) and, through a pipe, a wake-up of the reader for each.
	var b bytes.Buffer
	text(&b)
	_, _ = a.stdout.Write(b.Bytes())
}

func (a *app) writeJSON(obj map[string]any) {
	enc := json.NewEncoder(a.stdout)
	enc.SetIndent("", "  ")
	_ = enc.Encode(obj)
}

// fail reports err and returns its exit code.
func (a *app) fail(err error) int {
	var re reportedError
	if errors.As(err, &re) {
		return re.code
	}
	code, kind := classify(err)
	if a.json() {
		obj := map[string]any{"ok": false, "exit_code": code, "kind": kind, "error": err.Error()}
		var ce *publish.ConflictError
		if errors.As(err, &ce) {
			obj["conflict"] = map[string]any{"expected_generation": ce.Expected, "live_generation": ce.Actual, "reason": ce.Reason}
		}
		var mb *publish.MarkerBusyError
		if errors.As(err, &mb) {
			obj["marker"] = map[string]any{"owner": mb.Owner, "publish_id": mb.PublishID, "age_seconds": mb.Age.Seconds()}
		}
		var am aclMismatchError
		if errors.As(err, &am) {
			obj["acl"] = am.report
		}
		var ue undoableError
		if errors.As(err, &ue) {
			ue.addJSON(obj)
		}
		var de drivenError
		if errors.As(err, &de) && de.published != nil {
			obj["published"] = de.published
		}
		var af agentsFailingError
		if errors.As(err, &af) {
			obj["status"] = af.report
		}
		var re *publish.RemovalError
		if errors.As(err, &re) {
			obj["would_remove"] = re.Items
		}
		var oe *publish.OldAgentsError
		if errors.As(err, &oe) {
			obj["old_agents"] = oe.Agents
		}
		if probs := problems(err); len(probs) > 1 {
			obj["problems"] = probs
		}
		a.writeJSON(obj)
		return code
	}
	fmt.Fprintf(a.stderr, "confpush: %v\n", err)
	if kind == "usage" {
		fmt.Fprintln(a.stderr, "Run 'confpush --help' for usage.")
	}
	return code
}

// classify maps an error to its exit code and a kind for --json.
func classify(err error) (int, string) {
	var ue usageError
	switch {
	case errors.Is(err, zkclient.ErrPermission), errors.As(err, new(*zkclient.AuthError)):
		return exitPermission, "permission_denied"
	case errors.As(err, new(aclMismatchError)):
		return exitACL, "acl_mismatch"
	case errors.As(err, new(openTreeError)):
		return exitACL, "open_tree"
	case errors.As(err, new(rolloutError)):
		return exitRollout, "rollout_incomplete"
	case errors.As(err, new(agentsFailingError)):
		return exitFailing, "agents_failing"
	case errors.As(err, new(autoAbortedError)):
		return exitAborted, "rollout_aborted"
	case errors.Is(err, rollout.ErrEnded):
		return exitConflict, "rollout_ended"
	case errors.Is(err, publish.ErrNoRollout):
		return exitConflict, "no_rollout"
	case errors.Is(err, publish.ErrConflict):
		return exitConflict, "conflict"
	case errors.Is(err, publish.ErrMarkerBusy):
		return exitMarkerBusy, "marker_busy"
	case isRolloutInProgress(err):
		return exitMarkerBusy, "rollout_in_progress"
	case errors.As(err, new(*rollout.EmptySelectionError)):
		return exitUsage, "empty_canary"
	case errors.Is(err, publish.ErrWouldRemove):
		return exitUsage, "would_remove"
	case errors.Is(err, publish.ErrOldAgents):
		return exitUsage, "old_agents"
	case isRootNotFound(err):
		return exitUsage, "root_not_found"
	case errors.As(err, &ue):
		return exitUsage, "usage"
	case errors.Is(err, publish.ErrInvalidInput):
		return exitUsage, "invalid_input"
	case errors.Is(err, publish.ErrFenced):
		return exitError, "fenced"
	case errors.Is(err, zkclient.ErrSessionExpired):
		return exitError, "session_expired"
	case errors.Is(err, publish.ErrOutcomeUnknown):
		return exitError, "outcome_unknown"
	case errors.Is(err, publish.ErrNotPublished):
		return exitError, "not_published"
	case errors.Is(err, publish.ErrGenerationNotFound):
		return exitError, "generation_not_found"
	case errors.As(err, new(*manifest.ItemMismatchError)):
		return exitError, "item_mismatch"
	case errors.Is(err, publish.ErrGenerationExhausted):
		return exitError, "generation_exhausted"
	case errors.Is(err, zkclient.ErrQuotaExceeded):
		return exitError, "quota_exceeded"
	}
	return exitError, "error"
}

// problems lists the entries of a multi-problem error.
func problems(err error) []string {
	var me interface{ WrappedErrors() []error }
	if !errors.As(err, &me) {
		return nil
	}
	var out []string
	for _, e := range me.WrappedErrors() {
		out = append(out, e.Error())
	}
	return out
}

// publisher is the root's Publisher on cl, refusing a manifest format the
// root's agents cannot read (rollout.Readers).
func (a *app) publisher(cl *zkclient.Client) (*publish.Publisher, error) {
	f, err := a.fleetOf(cl)
	if err != nil {
		return nil, usageError{err}
	}
	p, err := publish.New(cl, a.v.GetString("root"), publish.WithMeta(a.v.GetString("meta")),
		publish.WithLogger(a.log), rollout.Readers(f))
	if err != nil {
		return nil, usageError{err}
	}
	return p, nil
}
