package judge

import (
	"strings"
	"unicode/utf8"

	"github.com/tinehq/tine/internal/lazyre"
)

// Bounds of error-signal counting: only the last signalBytes of a text are
// read, and at most maxSignals lines are counted.
const (
	signalBytes = 64 << 10
	maxSignals  = 10000
)

// errorLine matches a line that reports an error. It is case-sensitive
// where the case carries meaning (FAIL, panic:, Traceback) and asks for
// the shape of a report ("error:", "[ERROR]", "ValueError:") rather than
// the bare word, which prose and code mention all the time.
var errorLine = lazyre.New(strings.Join([]string{
	`\bpanic: `,                                // Go panic
	`Traceback \(most recent call last\)`,      // Python
	`\bFAIL(?:ED|URE)?\b`,                      // go test, pytest, cargo, jest
	`(?i:\b(?:error|fatal)\b(?:\[[^\]]*\])?:)`, // error: fatal: Error: ERROR: error[E0308]: fatal error:
	`(?i:\[(?:error|fatal)\])`,                 // [ERROR] log levels
	`(?i:\blevel=(?:error|fatal)\b)`,           // structured logs
	`\b[A-Z][A-Za-z0-9]*(?:Exception|Error):`,  // ValueError: java.lang.IllegalStateException:
	`\bException in thread\b`,                  // Java
	`(?i:\bun(?:caught|handled) exception\b)`,  // Node, .NET
	`^\s*(?:ERROR|FATAL|PANIC)\b`,              // upper-case level at line start
}, "|"))

// noErrorLine matches a line that reports the absence of errors, such as
// "0 errors", "no errors found", "failures: 0" or "without error".
var noErrorLine = lazyre.New(`(?i)\b(?:0|no|zero|without)\s+(?:errors?|failures?|failed|panics?|exceptions?)\b` +
	`|\b(?:errors?|fail(?:ures?|ed|s)?)\s*[:=]\s*0\b`)

// signalWords are fragments of which every error report errorLine matches
// holds one, in lower, title or upper case; a line with none of them is
// skipped without running the regular expressions.
var signalWords = []string{"rror", "RROR", "FAIL", "anic", "ANIC", "atal", "ATAL", "Traceback", "xception", "XCEPTION"}

func mayReport(line string) bool {
	for _, w := range signalWords {
		if strings.Contains(line, w) {
			return true
		}
	}
	return false
}

// errorSignals counts the lines of the tail of text that report an error;
// a line that also reports the absence of errors is not counted, even if
// it says something else too, so "FAIL: 0 failures" counts nothing.
func errorSignals(text string) int {
	if len(text) > signalBytes {
		text = text[len(text)-signalBytes:]
		for len(text) > 0 && !utf8.RuneStart(text[0]) {
			text = text[1:]
		}
	}
	n := 0
	for line := range strings.Lines(text) {
		if mayReport(line) && errorLine().MatchString(line) && !noErrorLine().MatchString(line) {
			n++
			if n == maxSignals {
				break
			}
		}
	}
	return n
}
