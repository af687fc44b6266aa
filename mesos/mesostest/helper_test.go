package mesostest_test

import (
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
)

// helperListen, when set in the environment, makes the test binary a
// helper task instead: it listens on the comma-separated addresses, prints
// "listening", and waits to be killed.
const helperListen = "MESOSTEST_HELPER_LISTEN"

func TestMain(m *testing.M) {
	if addrs := os.Getenv(helperListen); addrs != "" {
		var lns []net.Listener
		for _, a := range strings.Split(addrs, ",") {
			ln, err := net.Listen("tcp", a)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(3)
			}
			lns = append(lns, ln)
		}
		fmt.Println("listening")
		for { // until killed
			if c, err := lns[0].Accept(); err == nil {
				c.Close()
			}
		}
	}
	os.Exit(m.Run())
}
