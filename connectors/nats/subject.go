package nats

import "strings"

// matches reports whether subject (no wildcards) is matched by filter,
// which may hold '*' (one token) and '>' (the rest, at least one token).
func matches(filter, subject string) bool {
	for {
		ft, frest, fmore := strings.Cut(filter, ".")
		st, srest, smore := strings.Cut(subject, ".")
		switch {
		case ft == ">":
			return true
		case ft != "*" && ft != st:
			return false
		case !fmore || !smore:
			return fmore == smore
		}
		filter, subject = frest, srest
	}
}

// share returns instance index's filters of subjects among par instances:
// those j with j mod par = index; [""] (the whole stream) without subjects.
func share(subjects []string, index, par int) []string {
	if len(subjects) == 0 {
		return []string{""}
	}
	var out []string
	for j, s := range subjects {
		if j%par == index {
			out = append(out, s)
		}
	}
	return out
}
