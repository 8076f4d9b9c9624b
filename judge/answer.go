package judge

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxRationaleBytes bounds the rationale kept from a model's answer.
const maxRationaleBytes = 2 << 10

// answer is the model's verdict, by label.
type answer struct {
	Winner     *string             `json:"winner"`
	Confidence *float64            `json:"confidence"`
	Scores     map[string]*float64 `json:"scores"`
	Rationale  string              `json:"rationale"`
}

// parseAnswer reads a model's answer: one JSON object, alone or in a
// ```json fence, whose winner is one of labels, whose confidence and
// scores lie in [0, 1], with a score for every label and no other, and the
// winner's the highest. Any other answer is an error wrapping ErrBadAnswer.
func parseAnswer(text string, labels []string) (*answer, error) {
	body, err := unfence(strings.TrimSpace(text))
	if err != nil {
		return nil, err
	}
	var a answer
	if err := json.Unmarshal([]byte(body), &a); err != nil {
		return nil, badAnswer("not a JSON object: %v (answer starts %q)", err, snippet(body, 80))
	}
	if err := a.check(labels); err != nil {
		return nil, err
	}
	return &a, nil
}

// unfence returns the inside of a ```json (or bare ```) fence around s,
// and s itself when it has none.
func unfence(s string) (string, error) {
	if !strings.HasPrefix(s, "```") {
		return s, nil
	}
	first, rest, ok := strings.Cut(s, "\n")
	if lang := strings.TrimSpace(first[3:]); lang != "" && !strings.EqualFold(lang, "json") {
		return "", badAnswer("fenced as %q, not json", snippet(lang, 20))
	}
	inner, found := strings.CutSuffix(strings.TrimRight(rest, " \t\r\n"), "```")
	if !ok || !found {
		return "", badAnswer("unclosed ``` fence")
	}
	return inner, nil
}

func (a *answer) check(labels []string) error {
	switch {
	case a.Winner == nil:
		return badAnswer("no winner")
	case a.Confidence == nil:
		return badAnswer("no confidence")
	case !unit(*a.Confidence):
		return badAnswer("confidence %v is not in [0, 1]", *a.Confidence)
	case !slices.Contains(labels, *a.Winner):
		return badAnswer("winner %q is not one of %s", snippet(*a.Winner, 20), strings.Join(labels, ", "))
	case len(a.Scores) != len(labels):
		return badAnswer("%d scores for %d candidates", len(a.Scores), len(labels))
	}
	for _, l := range labels {
		s, ok := a.Scores[l]
		switch {
		case !ok || s == nil:
			return badAnswer("no score for candidate %s", l)
		case !unit(*s):
			return badAnswer("score %v of candidate %s is not in [0, 1]", *s, l)
		case *s > *a.Scores[*a.Winner]:
			return badAnswer("candidate %s scores above the winner %s", l, *a.Winner)
		}
	}
	return nil
}

// verdict maps a checked answer back to run ids.
func (p *prompt) verdict(a *answer) *Verdict {
	v := &Verdict{Judge: "llm", Winner: p.runs[*a.Winner], Confidence: *a.Confidence, Scores: map[string]float64{}}
	for l, s := range a.Scores {
		v.Scores[p.runs[l]] = *s
	}
	keys := make([]string, len(p.labels))
	for i, l := range p.labels {
		keys[i] = l + "=" + p.names[l]
	}
	v.Rationale = fmt.Sprintf("%s [%s]", clean(a.Rationale, maxRationaleBytes), strings.Join(keys, " "))
	return v
}

func unit(x float64) bool { return x >= 0 && x <= 1 } // false for NaN

func badAnswer(format string, args ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), ErrBadAnswer)
}

// clean returns s on one line, without control characters, cut to at most
// limit bytes.
func clean(s string, limit int) string {
	s = strings.Join(strings.Fields(strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == utf8.RuneError {
			return ' '
		}
		return r
	}, s)), " ")
	if len(s) > limit {
		s = strings.ToValidUTF8(s[:limit], "") + "…"
	}
	return s
}

// snippet is clean with a small bound, for quoting in errors.
func snippet(s string, limit int) string {
	return clean(s, limit)
}
