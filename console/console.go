// Package console is Sluice's web console: hand-written HTML, CSS and
// JavaScript embedded in the binary, which every node serves at /ui/ on
// its control address (see package control). The pages hold no data: they
// read the control API (GET /v1/console/events, a server-sent event
// stream of api.ConsoleSnapshot every second) and act through it (deploy,
// scale, kill), sending the token they ask for when the API answers 401.
// No JavaScript library is vendored.
package console

import (
	"embed"
	"io/fs"
	"net/http"
	"strings"
)

// Path is where the console is served.
const Path = "/ui/"

//go:embed assets
var assets embed.FS

// Public reports whether path is one of the console's pages or assets,
// which are served without authentication (they hold no data).
func Public(path string) bool {
	return path == "/ui" || strings.HasPrefix(path, Path)
}

// Handler serves the console's files under Path.
func Handler() http.Handler {
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	files := http.StripPrefix(Path, http.FileServerFS(sub))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		// A node upgraded in place serves its own pages, not a cached copy.
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'")
		files.ServeHTTP(w, r)
	})
}
