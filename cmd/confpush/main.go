// Command confpush publishes config sets to ZooKeeper atomically, shows
// what would change, reads any retained generation, lists the history and
// rolls back. Run "confpush --help" for the commands, flags and exit codes;
// docs/confpush.md has the details.
package main

import "os"

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }
