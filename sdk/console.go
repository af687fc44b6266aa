package sdk

import "github.com/sluicehq/sluice/console"

// ConsoleURL returns the URL of the node's web console (package console):
// its control API's base URL and /ui/; "" when the control API is off.
func (r *Runtime) ConsoleURL() string {
	if r.http == nil {
		return ""
	}
	return r.http.URL() + console.Path
}
