package mesos

import (
	"bytes"
	"context"
	"encoding/json"
	"time"

	"github.com/sluicehq/sluice/mesos/mesosstatus"
)

// publish writes the status to Consul while leading: StatusDebounce after
// a change, and every StatusInterval.
func (s *Scheduler) publish(ctx context.Context, l *leadership) {
	interval := time.NewTicker(s.cfg.StatusInterval)
	defer interval.Stop()
	var (
		last     []byte // last written, without Updated
		debounce <-chan time.Time
		failing  bool
	)
	write := func(force bool) {
		st := s.Status()
		if st.Role != mesosstatus.RoleLeader {
			return
		}
		cmp := st
		cmp.Updated = time.Time{}
		key, _ := json.Marshal(cmp)
		if !force && bytes.Equal(key, last) {
			return
		}
		b, err := marshalStatus(st)
		if err != nil {
			return
		}
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err = l.write(wctx, map[string][]byte{mesosstatus.Key(s.cfg.Cluster): b})
		cancel()
		switch {
		case err != nil && ctx.Err() == nil && !failing:
			failing = true
			s.log.Warn("mesos: publishing status", "err", err)
		case err == nil:
			failing = false
			last = key
		}
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.statusNotify:
			if debounce == nil {
				debounce = time.After(s.cfg.StatusDebounce)
			}
		case <-debounce:
			debounce = nil
			write(false)
		case <-interval.C:
			write(true)
		}
	}
}

func marshalStatus(st mesosstatus.Status) ([]byte, error) { return json.Marshal(st) }
