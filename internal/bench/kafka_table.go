package bench

import (
	"fmt"
	"io"
	"time"

	"github.com/sluicehq/sluice/internal/kafkatest"
)

// Sizes of the Kafka scenarios in the table: Goka counts about 30k
// words/s here, so the runs stay short.
const (
	kafkaTableRecords = 200_000 // per saturated run (at most TableConfig.Records)
	kafkaPacedRecords = 30_000  // per paced run
	kafkaPacedRate    = 10_000  // records/s, within both processors' reach
)

// kafkaRows measures the Kafka word count as a Goka processor and as a
// Sluice pipeline, alternately on one kfake broker, runs times each,
// saturated and then paced, printing progress to w; it returns the table
// rows (medians; the ratio is Sluice's median over Goka's).
func kafkaRows(w io.Writer, runs, records int) ([]row, error) {
	runs = max(runs, 1)
	b, err := kafkatest.NewBroker(kafkatest.BrokerConfig{})
	if err != nil {
		return nil, err
	}
	defer b.Close()
	type scenario struct {
		name string
		run  func(KafkaWordCountConfig) (Result, error)
	}
	both := []scenario{{"goka kafka word count", GokaWordCount}, {"sluice kafka word count", SluiceKafkaWordCount}}
	measure := func(cfg KafkaWordCountConfig, suffix string) ([2][]Result, error) {
		var rs [2][]Result
		for i := range runs {
			for j, s := range both {
				fmt.Fprintf(w, "  %s%s: run %d/%d…", s.name, suffix, i+1, runs)
				r, err := s.run(cfg)
				if err != nil {
					fmt.Fprintln(w)
					return rs, fmt.Errorf("%s: %w", s.name, err)
				}
				fmt.Fprintf(w, " %.0f/s, p99 %v\n", r.PerSec(), r.Percentile(99).Round(time.Millisecond))
				rs[j] = append(rs[j], r)
			}
		}
		return rs, nil
	}
	rate := func(rs []Result) float64 {
		xs := make([]float64, len(rs))
		for i, r := range rs {
			xs[i] = r.PerSec()
		}
		return Median(xs)
	}
	p99 := func(rs []Result) time.Duration {
		xs := make([]float64, len(rs))
		for i, r := range rs {
			xs[i] = float64(r.Percentile(99))
		}
		return time.Duration(Median(xs)).Round(time.Millisecond)
	}
	sat, err := measure(KafkaWordCountConfig{Broker: b, Records: min(records, kafkaTableRecords)}, "")
	if err != nil {
		return nil, err
	}
	paced, err := measure(KafkaWordCountConfig{Broker: b, Records: kafkaPacedRecords, Rate: kafkaPacedRate}, " at 10k/s")
	if err != nil {
		return nil, err
	}
	goka, sluice := rate(sat[0]), rate(sat[1])
	return []row{
		{"goka kafka word count (baseline)", human(goka), "records/s", "1.00×", "kfake: words topic → count (LevelDB + table topic) → counts topic"},
		{"sluice kafka word count", human(sluice), "records/s", fmt.Sprintf("%.2f×", sluice/goka),
			"same broker and topics; at-least-once, Kafka state log; target ≥ 5.00×"},
		{"  e2e p99 goka / sluice, saturated", fmt.Sprintf("%v / %v", p99(sat[0]), p99(sat[1])), "", "", "input written at full speed"},
		{"  e2e p99 goka / sluice at 10k records/s", fmt.Sprintf("%v / %v", p99(paced[0]), p99(paced[1])), "", "", "input paced"},
	}, nil
}
