package hook

import (
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// Choice is a resolution a person typed as a whole prompt: approve or
// refuse a pending request, or merge, choose, promote or discard a run.
type Choice struct {
	// Verb is approve, refuse, merge, choose, promote or discard: "reject"
	// is recorded as refuse, "pick" and "select" as choose (the words of
	// tine's approvals and actions).
	Verb string `json:"verb"`
	// Target is the request id (approve, reject) or the run's name.
	Target string `json:"target,omitempty"`
	// Fork is N in "pick fork N".
	Fork int `json:"fork,omitempty"`
}

// String is the choice in its canonical words ("merge source-2").
func (c Choice) String() string {
	if c.Fork > 0 {
		return c.Verb + " fork " + strconv.Itoa(c.Fork)
	}
	return c.Verb + " " + c.Target
}

// The patterns are deliberately strict: the prompt must be the choice and
// nothing else, a request id is 4 to 32 lowercase letters and digits
// shaped like an id (see looksLikeID), and a run's name must look like one
// (contain a digit, '-', '_' or '.', or be WORKSPACE/RUN), so "merge it",
// "select all" or "pick main" do not count. They are compiled on first
// use: most hook processes never read a prompt.
var choiceRes = sync.OnceValue(func() [3]*regexp.Regexp {
	return [3]*regexp.Regexp{
		regexp.MustCompile(`^(?i:(?:tine[:,]?\s+)?(approve|reject|refuse))\s+([a-z0-9]{4,32})$`),
		regexp.MustCompile(`^(?i:(?:tine[:,]?\s+)?(merge|choose|pick|select|promote|discard)\s+fork\s+#?)([1-9][0-9]{0,2})$`),
		regexp.MustCompile(`^(?i:(?:tine[:,]?\s+)?(merge|choose|pick|select|promote|discard))\s+((?:[A-Za-z0-9][A-Za-z0-9._-]{0,63}/)?[A-Za-z0-9][A-Za-z0-9._-]{0,63})$`),
	}
})

// ParseChoice recognises a prompt that is only an explicit choice:
// "approve a1b2c3d4", "reject a1b2c3d4", "merge source-2",
// "choose source-1", "pick fork 2", "select app/try-sqlite",
// "discard source-3", optionally
// prefixed with "tine:" and ended with '.' or '!'.
func ParseChoice(prompt string) (Choice, bool) {
	p := strings.TrimRight(strings.TrimSpace(prompt), ".!")
	res := choiceRes()
	approveRe, forkRe, runRe := res[0], res[1], res[2]
	if m := approveRe.FindStringSubmatch(p); m != nil && looksLikeID(m[2]) {
		return Choice{Verb: verb(m[1]), Target: m[2]}, true
	}
	if m := forkRe.FindStringSubmatch(p); m != nil {
		n, _ := strconv.Atoi(m[2])
		return Choice{Verb: verb(m[1]), Fork: n}, true
	}
	if m := runRe.FindStringSubmatch(p); m != nil && looksLikeRun(m[2]) {
		return Choice{Verb: verb(m[1]), Target: m[2]}, true
	}
	return Choice{}, false
}

// verb puts a typed verb in tine's words.
func verb(s string) string {
	switch s = strings.ToLower(s); s {
	case "pick", "select":
		return "choose"
	case "reject":
		return "refuse"
	}
	return s
}

// looksLikeID accepts ids with a digit and tine's approval ids ("a" and
// eight characters of an alphabet without l, o, 0 and 1), not words such
// as "this".
func looksLikeID(s string) bool {
	if strings.ContainsAny(s, "0123456789") {
		return true
	}
	return len(s) == 9 && s[0] == 'a' && !strings.ContainsAny(s, "lo")
}

// looksLikeRun accepts names tine gives forks (source-2) and qualified
// names, not plain words.
func looksLikeRun(s string) bool {
	return strings.ContainsAny(s, "0123456789-_./")
}
