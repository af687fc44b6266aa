package main

import (
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/sluicehq/sluice/control/api"
)

// usageError is a bad command line: exit code 2.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// apiError is an error answer of the control API.
type apiError struct {
	Method, Path string
	Status       int       // HTTP status code
	Body         api.Error // as answered; Error is set even for a body that was not JSON
	// Summary, when set, replaces the server's message; Hint says what to
	// do (for a 401 or 403 answer, say) and follows it.
	Summary, Hint string
}

// Error returns the server's message (its field problems are in Lines).
func (e *apiError) Error() string {
	msg := e.Body.Error
	if e.Summary != "" {
		msg = e.Summary
	}
	if e.Hint != "" {
		return msg + ": " + e.Hint
	}
	return msg
}

// tlsError is a TLS failure explained in terms of the flags.
type tlsError struct {
	msg string
	err error
}

func (e *tlsError) Error() string { return e.msg }
func (e *tlsError) Unwrap() error { return e.err }

// Lines returns the server's field problems, each "field: problem".
func (e *apiError) Lines() []string { return e.Body.Fields }

// Conflict reports a 409: the change lost a race with another one.
func (e *apiError) Conflict() bool { return e.Body.Conflict || e.Status == http.StatusConflict }

// listError is an error with a list of problems, printed one per line
// under its message: every invalid field of a manifest, say.
type listError struct {
	msg   string
	lines []string
}

func (e *listError) Error() string   { return e.msg }
func (e *listError) Lines() []string { return e.lines }

// exitCode returns the exit code for err.
func exitCode(err error) int {
	var ue *usageError
	var ae *apiError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ue):
		return exitUsage
	case errors.As(err, &ae) && ae.Conflict():
		return exitConflict
	}
	return exitError
}

// printError writes err to w as "sluice: message", then its problems (see
// listError and apiError) one per line, indented. Errors joined with
// errors.Join are printed one after the other.
func printError(w io.Writer, err error) {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			printError(w, e)
		}
		return
	}
	fmt.Fprintf(w, "sluice: %v\n", err)
	var l interface{ Lines() []string }
	if errors.As(err, &l) {
		for _, line := range l.Lines() {
			fmt.Fprintf(w, "  %s\n", line)
		}
	}
	var ae *apiError
	if errors.As(err, &ae) && ae.Conflict() {
		fmt.Fprintln(w, "sluice: conflict: the topology changed while this change was being made, so it was not applied; check the cluster (sluice ls) and run the command again")
	}
}
