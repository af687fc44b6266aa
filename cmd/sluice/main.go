// Command sluice is the command-line client of a Sluice cluster: it
// deploys, scales, kills and inspects operators at run time through the
// HTTP+JSON control API that every node serves (package control). Any node
// will do; --addr or $SLUICE_ADDR names one.
//
//	sluice deploy -f count.yaml
//	sluice scale count 8
//	sluice ls
//	sluice describe count
//	sluice graph --dot | dot -Tsvg > graph.svg
//	sluice status
//	sluice tail counts -n 10
//	sluice kill count --purge
//
// Exit codes: 0 success, 1 error, 2 bad usage, 3 conflict (the topology
// changed concurrently; run the command again). See docs/cli.md.
package main

import "os"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}
