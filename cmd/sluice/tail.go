package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluicehq/sluice/control/api"
	"github.com/sluicehq/sluice/internal/core"
)

// maxTailLine bounds one record's line of GET /v1/streams/{name}/tail.
const maxTailLine = 64 << 20

func newTailCmd(a *app) *cobra.Command {
	var n int
	cmd := &cobra.Command{
		Use:   "tail STREAM",
		Short: "Print the records of a stream as they are produced",
		Long: `Tail prints the records produced to a stream from now on, one a line, until
interrupted or, with -n, after N records. Each line holds the event time (or
-), the key and the value, tab-separated; a key or value that is not UTF-8
text is printed as base64:…. With --json it prints each record as the API
sends it (GET /v1/streams/{name}/tail, one JSON object a line: key, value or
keyBase64, valueBase64, eventTime, headers).

While tail runs, the node deploys a reader operator sluice-tail-<random>
that hands it every record of the stream once; a slow terminal holds the
stream's producers back like any slow operator. It is removed when tail
ends.`,
		Example: "  sluice tail words -n 10\n  sluice tail counts --json | jq .value",
		Args:    cobra.ExactArgs(1),
		RunE: runE(func(ctx context.Context, args []string) error {
			if n < 0 {
				return &usageError{fmt.Errorf("-n must be ≥ 1 (or 0: until interrupted), got %d", n)}
			}
			if err := core.ValidName(args[0]); err != nil {
				return &usageError{fmt.Errorf("bad stream name: %w", err)}
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			var q url.Values
			if n > 0 {
				q = url.Values{"n": {strconv.Itoa(n)}}
			}
			path := "/v1/streams/" + args[0] + "/tail"
			body, err := c.stream(ctx, path, q)
			if err != nil {
				return err
			}
			defer func() { _ = body.Close() }()
			sc := bufio.NewScanner(body)
			sc.Buffer(make([]byte, 64<<10), maxTailLine)
			for seen := 0; sc.Scan(); seen++ {
				if err := printTailLine(a, sc.Bytes()); err != nil {
					return err
				}
				if n > 0 && seen+1 == n {
					return nil
				}
			}
			if err := sc.Err(); err != nil && !errors.Is(err, context.Canceled) {
				return fmt.Errorf("GET %s: %w", path, err)
			}
			return nil
		}),
	}
	cmd.Flags().IntVarP(&n, "n", "n", 0, "stop after N records (0: until interrupted)")
	return cmd
}

// printTailLine prints one record of the tail answer.
func printTailLine(a *app, line []byte) error {
	if a.json {
		_, err := fmt.Fprintf(a.stdout, "%s\n", line)
		return err
	}
	var r api.TailRecord
	if err := json.Unmarshal(line, &r); err != nil {
		return fmt.Errorf("the node answered a malformed record: %w", err)
	}
	at := "-"
	if !r.EventTime.IsZero() {
		at = r.EventTime.Format(time.RFC3339Nano)
	}
	_, err := fmt.Fprintf(a.stdout, "%s\t%s\t%s\n", at, textOr64(r.Key, r.KeyBase64), textOr64(r.Value, r.ValueBase64))
	return err
}

func textOr64(text, b64 string) string {
	if b64 != "" {
		return "base64:" + b64
	}
	return text
}
