// Command child is the program TestContainerImage runs under confagent exec
// inside the image: it records who it is and what it sees into the log
// given as its first argument, leaves an orphaned grandchild, waits until
// that grandchild is reaped (by PID 1: confagent exec) and exits 0, or 1
// when the orphan is not reaped within a minute.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

func main() {
	switch os.Getenv("CHILD_ROLE") {
	case "intermediate":
		cmd := exec.Command("/proc/self/exe")
		cmd.Env = append(os.Environ(), "CHILD_ROLE=orphan", "ORPHAN_PARENT="+strconv.Itoa(os.Getpid()))
		cmd.Stdout = os.Stdout
		if err := cmd.Start(); err != nil {
			os.Exit(2)
		}
		os.Exit(0)
	case "orphan":
		parent, _ := strconv.Atoi(os.Getenv("ORPHAN_PARENT"))
		for deadline := time.Now().Add(time.Minute); os.Getppid() == parent && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
		}
		fmt.Printf("%d %d\n", os.Getpid(), os.Getppid())
		os.Exit(0)
	}
	log, err := os.OpenFile(os.Args[1], os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		os.Exit(3)
	}
	defer log.Close()
	b, _ := os.ReadFile(os.Args[2])
	fmt.Fprintf(log, "pid=%d ppid=%d uid=%d file=%s\n", os.Getpid(), os.Getppid(), os.Getuid(), strings.TrimSpace(string(b)))
	cmd := exec.Command("/proc/self/exe")
	cmd.Env = append(os.Environ(), "CHILD_ROLE=intermediate")
	out, err := cmd.StdoutPipe()
	if err != nil {
		os.Exit(4)
	}
	if err := cmd.Start(); err != nil {
		os.Exit(4)
	}
	// The orphan inherits the pipe: its line arrives once its parent died.
	var pid, ppid int
	if _, err := fmt.Fscanf(out, "%d %d\n", &pid, &ppid); err != nil {
		fmt.Fprintf(log, "orphan: %v\n", err)
		os.Exit(5)
	}
	_ = cmd.Wait()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); os.IsNotExist(err) {
			fmt.Fprintf(log, "orphan adopted by %d and reaped\n", ppid)
			os.Exit(0)
		}
		if time.Now().After(deadline) {
			st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
			fmt.Fprintf(log, "orphan adopted by %d, not reaped: %s\n", ppid, st)
			os.Exit(1)
		}
	}
}
