package tine

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Option is an option of a request as an error message names it, in the
// domain's words: Field is its name in the API (the JSON field: "into",
// "copies", "drop_source_changes"), Value the value meant when the message
// is about one (Field "scope", Value "git"). The message says it as the
// API does, so MCP and HTTP clients read their own words; the CLI names it
// as its flag (--into, --git) where it prints the message.
type Option struct {
	Field string `json:"field"`
	Value string `json:"value,omitempty"`
}

// Opt is the option named by field, with value if given.
func Opt(field string, value ...string) Option {
	o := Option{Field: field}
	if len(value) > 0 {
		o.Value = value[0]
	}
	return o
}

// String is the option in the API's words: field, or field=value.
func (o Option) String() string {
	if o.Value == "" {
		return o.Field
	}
	return o.Field + "=" + o.Value
}

// Part is a piece of a message that names options: text, or an option.
type Part struct {
	Text   string  `json:"text,omitempty"`
	Option *Option `json:"option,omitempty"`
}

// OptionError is a refusal whose message names options of the request.
// Its Error names them in the API's words; Text names them as the caller
// says them.
type OptionError struct {
	parts []Part
	err   error // the message in the API's words, wrapping its sentinel
}

// Optionf is fmt.Errorf for a message naming options of the request: pass
// each option as an Option argument (printed with %s) and the sentinel
// with %w.
func Optionf(format string, args ...any) error {
	marked := make([]any, len(args))
	var opts []Option
	for i, a := range args {
		if o, ok := a.(Option); ok {
			a = mark + strconv.Itoa(len(opts)) + mark
			opts = append(opts, o)
		}
		marked[i] = a
	}
	var parts []Part
	for i, s := range strings.Split(fmt.Errorf(format, marked...).Error(), mark) {
		if i%2 == 0 {
			parts = appendText(parts, s)
		} else if n, err := strconv.Atoi(s); err == nil && n < len(opts) {
			parts = append(parts, Part{Option: &opts[n]})
		}
	}
	return &OptionError{parts: parts, err: fmt.Errorf(format, args...)}
}

// mark brackets an option's index while Optionf splits its message: no
// name, path or flag holds a NUL.
const mark = "\x00"

// Error is the message with each option in the API's words.
func (e *OptionError) Error() string { return e.err.Error() }

// Unwrap returns the message's error, which wraps its sentinel.
func (e *OptionError) Unwrap() error { return e.err }

// Text is the message with each option named by name (the CLI's flags).
func (e *OptionError) Text(name func(Option) string) string { return JoinParts(e.parts, name) }

// JoinParts is the message of parts with each option named by name.
func JoinParts(parts []Part, name func(Option) string) string {
	var b strings.Builder
	for _, p := range parts {
		if p.Option != nil {
			b.WriteString(name(*p.Option))
		} else {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// OptionParts returns the parts of err's whole message when it wraps an
// OptionError (what wraps it adds text around it), else nil.
func OptionParts(err error) []Part {
	var oe *OptionError
	if !errors.As(err, &oe) {
		return nil
	}
	whole, inner := err.Error(), oe.Error()
	i := strings.Index(whole, inner)
	if i < 0 {
		return nil
	}
	parts := append(appendText(nil, whole[:i]), oe.parts...)
	return appendText(parts, whole[i+len(inner):])
}

// appendText appends text to parts unless it is empty.
func appendText(parts []Part, text string) []Part {
	if text == "" {
		return parts
	}
	return append(parts, Part{Text: text})
}

// NewOptionError is the OptionError of a message's parts that wraps err,
// whose Error is the message in the API's words (an API client rebuilds
// with it what the daemon answered).
func NewOptionError(parts []Part, err error) error {
	return &OptionError{parts: parts, err: err}
}
