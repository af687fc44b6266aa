package sinkhealth_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/sinkhealth"
)

var errDown = errors.New("system unavailable")

func TestOutageLastsFromTheFirstFailureToAnAnswer(t *testing.T) {
	var c sinkhealth.Counters
	a, b := sinkhealth.NewInstance(&c), sinkhealth.NewInstance(&c)
	a.Wrote(3, 30)
	if c.Rows() != 3 || c.Bytes() != 30 || c.Outage(errDown) != nil || !c.DownSince().IsZero() {
		t.Fatalf("rows %d bytes %d outage %v; want 3, 30, none", c.Rows(), c.Bytes(), c.Outage(errDown))
	}
	a.Failed(errors.New("refused"), true)
	since := c.DownSince()
	if d := a.Failed(errors.New("refused again"), true); d < 0 || c.DownSince() != since {
		t.Fatalf("a second failure moved the outage's start (%v → %v)", since, c.DownSince())
	}
	b.Failed(errors.New("timeout"), false) // b's system answered
	err := c.Outage(errDown)
	if !errors.Is(err, errDown) || !strings.Contains(err.Error(), "refused again") {
		t.Fatalf("Outage = %v, want a's", err)
	}
	if last, _ := c.LastError(); last == nil || last.Error() != "timeout" || c.Errors() != 3 {
		t.Fatalf("last error %v, %d errors; want timeout, 3", last, c.Errors())
	}
	a.Up()
	if c.Outage(errDown) != nil {
		t.Fatal("the outage is not over after an answer")
	}
	b.Failed(errors.New("down"), true)
	b.Close()
	if c.Outage(errDown) != nil {
		t.Fatal("a closed instance's outage is still reported")
	}
}
