package zktest

import (
	"archive/zip"
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-zookeeper/zk"
)

// baseJVMFlags are the java flags of every test server. A server's CPU
// is mostly its start: the serial collector and the C1 compiler alone (a
// test server never runs long enough for C2 to pay), one compiler thread
// and no perf-data file (nothing reads hsperfdata: no jps, no jstat) cut
// it further on a loaded 2-core machine.
func baseJVMFlags() []string {
	return []string{
		"-Xmx256m", "-Xss512k", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-XX:CICompilerCount=1", "-XX:-UsePerfData", "-Xshare:auto",
	}
}

// archiveFormat names the archive's recipe: change it when what goes into
// an archive changes (training, flags), so old archives are not used.
const archiveFormat = "zktest-appcds-1"

// serverJava is how a cluster's servers are started: the classpath and
// the flags that map the class archive, if there is one.
type serverJava struct {
	classpath string
	flags     []string
	// archive is the class archive the flags map, "" without one.
	archive string
}

// classArchive returns how to start servers: from an AppCDS archive of
// the ZooKeeper server's classes (the JVM then maps the classes instead
// of loading, parsing and verifying them, about a third of a start's
// CPU), creating it first when it is missing and no other process is
// creating it. The archive is created once per java and ZooKeeper jars
// (its name is a hash of their identity) in the user's cache directory.
// Anything wrong with it (none can be made, another process is making
// it, a start from it fails) means a plain start: never a failed test.
func classArchive() serverJava {
	plain := serverJava{classpath: Classpath()}
	jars := archivableJars(plain.classpath)
	if len(jars) == 0 {
		return plain
	}
	file, err := archiveFile(jars)
	if err != nil {
		return plain
	}
	use := serverJava{
		classpath: plain.classpath,
		// Not -XX:+VerifySharedSpaces: it checksums the JDK's archive too
		// and costs 0.1-0.15 s of a start; usableArchive checks ours.
		flags:   []string{"-XX:SharedArchiveFile=" + file},
		archive: file,
	}
	if usableArchive(file) {
		return use
	}
	if _, err := os.Stat(file + ".failed"); err == nil {
		return plain
	}
	lock, err := os.OpenFile(file+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return plain
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return plain // another test binary is creating it: not worth waiting for
	}
	defer func() { _ = syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) }()
	if usableArchive(file) {
		return use
	}
	if err := trainArchive(file, jars); err != nil {
		markArchiveFailed(file, err)
		return plain
	}
	return use
}

// archivableJars returns the leading entries of classpath that are
// regular files: the part of the classpath an archive can hold (the JVM
// refuses to archive from a classpath with a non-empty directory, such as
// a conf directory, and the archived classpath must be a prefix of the one
// a server runs with).
func archivableJars(classpath string) []string {
	var jars []string
	for _, e := range filepath.SplitList(classpath) {
		fi, err := os.Stat(e)
		if err != nil || !fi.Mode().IsRegular() {
			break
		}
		jars = append(jars, e)
	}
	return jars
}

// archiveFile names the archive for the java on $PATH, the server's
// flags and these jars (with the jars their manifests pull in): a new
// JDK or ZooKeeper package gets a new archive, never a stale one.
func archiveFile(jars []string) (string, error) {
	h := sha256.New()
	fmt.Fprintln(h, archiveFormat, strings.Join(baseJVMFlags(), " "))
	java, err := exec.LookPath("java")
	if err != nil {
		return "", err
	}
	if java, err = filepath.EvalSymlinks(java); err != nil {
		return "", err
	}
	home := filepath.Dir(filepath.Dir(java))
	fmt.Fprintln(h, java)
	if err := hashFiles(h, []string{java, filepath.Join(home, "release"), filepath.Join(home, "lib", "server", "libjvm.so"), filepath.Join(home, "lib", "modules")}, true); err != nil {
		return "", err
	}
	if err := hashFiles(h, jars, false); err != nil {
		return "", err
	}
	for _, jar := range jars {
		if err := hashFiles(h, manifestClassPath(jar), true); err != nil {
			return "", err
		}
	}
	dir, err := archiveDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "zookeeper-"+hex.EncodeToString(h.Sum(nil))[:20]+".jsa"), nil
}

// hashFiles writes each file's path, size and modification time to h;
// a missing file is an error unless optional.
func hashFiles(h io.Writer, files []string, optional bool) error {
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil {
			if optional && errors.Is(err, os.ErrNotExist) {
				fmt.Fprintln(h, f, "missing")
				continue
			}
			return err
		}
		fmt.Fprintln(h, f, fi.Size(), fi.ModTime().UnixNano())
	}
	return nil
}

// manifestClassPath lists the jars a jar's manifest Class-Path names (the
// Debian zookeeper.jar pulls in netty, jute and the rest that way): the
// archive holds their classes too.
func manifestClassPath(jar string) []string {
	z, err := zip.OpenReader(jar)
	if err != nil {
		return nil
	}
	defer z.Close()
	f, err := z.Open("META-INF/MANIFEST.MF")
	if err != nil {
		return nil
	}
	defer f.Close()
	// Manifest lines are wrapped at 72 bytes; a continuation starts with
	// a space.
	var value strings.Builder
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		switch {
		case in && strings.HasPrefix(line, " "):
			value.WriteString(line[1:])
		case strings.HasPrefix(line, "Class-Path:"):
			in = true
			value.WriteString(strings.TrimPrefix(line, "Class-Path:"))
		default:
			in = false
		}
	}
	var out []string
	for _, u := range strings.Fields(value.String()) {
		if !filepath.IsAbs(u) {
			u = filepath.Join(filepath.Dir(jar), u)
		}
		out = append(out, u)
	}
	return out
}

// archiveDir is where archives live: the user's cache directory, or a
// directory of the user's own under the temp directory when there is no
// home (CI). The JVM maps the archive's classes into every test server,
// so a directory another user could write to is refused.
func archiveDir() (string, error) {
	if cache, err := os.UserCacheDir(); err == nil {
		dir := filepath.Join(cache, "zkconf-zktest")
		if err := os.MkdirAll(dir, 0o700); err == nil && ownDir(dir) {
			return dir, nil
		}
	}
	dir := filepath.Join(os.TempDir(), "zkconf-zktest-"+strconv.Itoa(os.Getuid()))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	if !ownDir(dir) {
		return "", fmt.Errorf("%s is not a directory only this user can write", dir)
	}
	return dir, nil
}

// ownDir reports whether dir is a real directory (not a link) owned by
// this user that no one else may write to.
func ownDir(dir string) bool {
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid() && fi.Mode().Perm()&0o022 == 0
}

// dynamicArchiveMagic starts a JDK dynamic CDS archive.
const dynamicArchiveMagic = 0xf00baba8

// usableArchive reports whether file is a dynamic archive as its
// creator wrote it (its SHA-256 is in file.sum: a few ms, where the JVM's
// own check costs a tenth of a second per start) that no start has found
// broken. The JVM checks the rest (its own version, the jars) and runs
// without the archive when they do not match.
func usableArchive(file string) bool {
	if _, err := os.Stat(file + ".failed"); err == nil {
		return false
	}
	want, err := os.ReadFile(file + ".sum")
	if err != nil {
		return false
	}
	sum, ok := archiveSum(file)
	return ok && sum == strings.TrimSpace(string(want))
}

// archiveSum returns the SHA-256 of a file that starts as a dynamic
// archive does.
func archiveSum(file string) (string, bool) {
	f, err := os.Open(file)
	if err != nil {
		return "", false
	}
	defer f.Close()
	var magic uint32
	if err := binary.Read(f, binary.LittleEndian, &magic); err != nil || magic != dynamicArchiveMagic {
		return "", false
	}
	h := sha256.New()
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return "", false
	}
	if _, err := io.Copy(h, f); err != nil {
		return "", false
	}
	return hex.EncodeToString(h.Sum(nil)), true
}

// markArchiveFailed records that file cannot be made or used, so that no
// later start tries again (a new JDK or ZooKeeper gets a new name).
func markArchiveFailed(file string, cause error) {
	_ = os.WriteFile(file+".failed", []byte(cause.Error()+"\n"), 0o600)
}

// trainArchive creates file: it starts a server from jars alone with
// -XX:ArchiveClassesAtExit, runs a session through the requests the tests
// make, and stops it with SIGTERM, at which the JVM writes the classes it
// loaded. The archive is written under a temporary name and renamed once
// the JVM has exited by itself, so no one maps half an archive.
func trainArchive(file string, jars []string) error {
	tmp := fmt.Sprintf("%s.tmp-%d", file, os.Getpid())
	defer os.Remove(tmp)
	p := &process{}
	defer p.stop()
	c, err := launch(p, Options{Size: 1}, serverJava{
		classpath: strings.Join(jars, string(filepath.ListSeparator)),
		flags:     []string{"-XX:ArchiveClassesAtExit=" + tmp},
	})
	if err != nil {
		return err
	}
	if err := c.session(trainSession); err != nil {
		return fmt.Errorf("train: %w", err)
	}
	s := c.Servers[0]
	c.mu.Lock()
	defer c.mu.Unlock()
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(2 * startTimeout):
		return errors.New("the training server did not exit on SIGTERM")
	}
	st := s.cmd.ProcessState
	s.cmd = nil
	s.logFile.Close()
	s.logFile = nil
	if st == nil || !st.Exited() {
		return fmt.Errorf("the training server did not exit by itself: %v", st)
	}
	sum, ok := archiveSum(tmp)
	if !ok {
		return fmt.Errorf("the training server wrote no archive:\n%s", s.tail())
	}
	// The sum goes first: an archive in place always has its sum.
	if err := os.WriteFile(tmp+".sum", []byte(sum+"\n"), 0o600); err != nil {
		return err
	}
	defer os.Remove(tmp + ".sum")
	if err := os.Rename(tmp+".sum", file+".sum"); err != nil {
		return err
	}
	return os.Rename(tmp, file)
}

// trainSession makes the requests the tests make (nodes, data, ACLs,
// watches, multi, quotas' nodes), so that the server classes that serve
// them are in the archive too.
func trainSession(conn *zk.Conn) error {
	open := zk.WorldACL(zk.PermAll)
	if _, err := conn.Create("/train", []byte("x"), 0, open); err != nil {
		return err
	}
	if _, err := conn.Create("/train/seq-", nil, zk.FlagEphemeral|zk.FlagSequence, open); err != nil {
		return err
	}
	if _, _, _, err := conn.GetW("/train"); err != nil {
		return err
	}
	if _, _, _, err := conn.ChildrenW("/train"); err != nil {
		return err
	}
	if _, _, _, err := conn.ExistsW("/train/none"); err != nil {
		return err
	}
	if _, err := conn.Multi(
		&zk.CreateRequest{Path: "/train/m", Data: []byte("m"), Acl: open},
		&zk.SetDataRequest{Path: "/train", Data: []byte("y"), Version: -1},
		&zk.CheckVersionRequest{Path: "/train", Version: 1},
	); err != nil {
		return err
	}
	if _, err := conn.SetACL("/train/m", zk.WorldACL(zk.PermRead|zk.PermDelete), -1); err != nil {
		return err
	}
	if _, err := conn.Sync("/train"); err != nil {
		return err
	}
	return deleteTree(conn, "/train")
}
