package creds

import (
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
)

// watcher calls check when the files it watches may have changed: on any
// file system event in their directories (so that a file replaced by a
// rename, or a Kubernetes secret whose "..data" symlink is swapped, is
// seen) and every poll interval. check compares contents, so spurious
// calls cost one read of small files.
//
// The watcher owns one goroutine, started by startWatcher and stopped (and
// waited for) by stop, which is safe to call twice.
type watcher struct {
	quit     chan struct{}
	done     chan struct{}
	stopOnce sync.Once
}

// startWatcher starts watching the directories of files. When file system
// events are unavailable (too many inotify watches, say) it logs why and
// polls only.
func startWatcher(files []string, poll time.Duration, log *slog.Logger, check func()) *watcher {
	w := &watcher{quit: make(chan struct{}), done: make(chan struct{})}
	var dirs []string
	for _, f := range files {
		if f == "" {
			continue
		}
		if abs, err := filepath.Abs(f); err == nil {
			f = abs
		}
		if d := filepath.Dir(f); !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		log.Warn("creds: no file system events; rereading the files every poll interval only", "interval", poll, "error", err)
		fw = nil
	}
	for _, d := range dirs {
		if fw == nil {
			break
		}
		if err := fw.Add(d); err != nil {
			log.Warn("creds: cannot watch a directory; rereading its files every poll interval only", "dir", d, "interval", poll, "error", err)
		}
	}
	go w.run(fw, poll, log, check)
	return w
}

// run is the watcher's goroutine.
func (w *watcher) run(fw *fsnotify.Watcher, poll time.Duration, log *slog.Logger, check func()) {
	defer close(w.done)
	var events <-chan fsnotify.Event
	var errs <-chan error
	if fw != nil {
		defer fw.Close()
		events, errs = fw.Events, fw.Errors
	}
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for {
		select {
		case <-w.quit:
			return
		case <-tick.C:
			check()
		case _, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			check()
		case err, ok := <-errs:
			if !ok {
				errs = nil
				continue
			}
			// An overflow loses events: reread now, the poll covers the rest.
			log.Warn("creds: file system events lost; rereading", "error", err)
			check()
		}
	}
}

// stop ends the goroutine and waits for it.
func (w *watcher) stop() {
	w.stopOnce.Do(func() { close(w.quit) })
	<-w.done
}
