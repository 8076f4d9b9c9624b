package config

import (
	"fmt"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/BurntSushi/toml"
)

// Warning is a problem in tine.toml that tine worked around: a key it does
// not know and ignored, or an invalid value it replaced with the default
// or dropped.
type Warning struct {
	File string // the path given to Load or LoadFile; "tine.toml" for Parse
	Line int    // from 1; 0 if unknown
	Msg  string
}

// String is the warning as file:line: message, or file: message if its
// line is unknown.
func (w Warning) String() string { return where(w.File, w.Line) + ": " + w.Msg }

func where(file string, line int) string {
	if line > 0 {
		return file + ":" + strconv.Itoa(line)
	}
	return file
}

// decoder reads the tables of tine.toml that tine checks key by key,
// turning what it cannot use into Warnings.
type decoder struct {
	file     string
	pos      *positions
	warnings []Warning
}

func (d *decoder) warn(line int, format string, args ...any) {
	d.warnings = append(d.warnings, Warning{File: d.file, Line: line, Msg: fmt.Sprintf(format, args...)})
}

// table is a TOML table read key by key. It remembers the keys it was
// asked for so that rest can report the others.
type table struct {
	d    *decoder
	path []string // indexed, to find lines: "account", "1"
	name string   // as the user reads it: "account"
	m    map[string]any
	used map[string]bool
}

// table returns v as a table at path, or warns that it is not one.
func (d *decoder) table(v any, name string, path ...string) (*table, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		d.warn(d.pos.line(path...), "%s: want a table, got %s (ignored)", name, describe(v))
		return nil, false
	}
	return &table{d: d, path: path, name: name, m: m, used: map[string]bool{}}, true
}

// sub returns the table at key k of t.
func (t *table) sub(k string, v any) (*table, bool) {
	return t.d.table(v, t.key(k), append(slices.Clip(t.path), k)...)
}

func (t *table) key(k string) string { return t.name + "." + toml.Key{k}.String() }

func (t *table) line(k string) int { return t.d.pos.line(append(slices.Clip(t.path), k)...) }

// known marks keys as read, for a table that returns before reading them
// all: rest does not report them.
func (t *table) known(keys ...string) {
	for _, k := range keys {
		t.used[k] = true
	}
}

func (t *table) get(k string) (any, bool) {
	t.used[k] = true
	v, ok := t.m[k]
	return v, ok
}

// bad warns that key k has value v where it wants want, and that tine
// does what fallback says instead.
func (t *table) bad(k string, v any, want, fallback string) {
	t.d.warn(t.line(k), "%s: want %s, got %s (%s)", t.key(k), want, describe(v), fallback)
}

// rest warns of the keys of t nobody asked for.
func (t *table) rest() {
	var unknown []string
	for k := range t.m {
		if !t.used[k] {
			unknown = append(unknown, k)
		}
	}
	slices.Sort(unknown)
	for _, k := range unknown {
		t.d.warn(t.line(k), "unknown key %q (ignored)", t.key(k))
	}
}

// The getters below store the value at k in *dst and report true if t has
// a valid one. If t has an invalid one, they warn and leave *dst, the
// default, alone.

func (t *table) bool(k string, dst *bool) bool {
	v, ok := t.get(k)
	if !ok {
		return false
	}
	b, ok := v.(bool)
	if !ok {
		t.bad(k, v, "true or false", using(*dst))
		return false
	}
	*dst = b
	return true
}

func (t *table) int(k string, lo, hi int, dst *int) bool {
	v, ok := t.get(k)
	if !ok {
		return false
	}
	n, ok := v.(int64)
	if !ok || n < int64(lo) || n > int64(hi) {
		t.bad(k, v, fmt.Sprintf("an integer from %d to %d", lo, hi), using(*dst))
		return false
	}
	*dst = int(n)
	return true
}

func (t *table) float(k string, lo, hi float64, want string, dst *float64) bool {
	v, ok := t.get(k)
	if !ok {
		return false
	}
	var f float64
	switch n := v.(type) {
	case int64:
		f = float64(n)
	case float64:
		f = n
	default:
		f = math.NaN()
	}
	if !(f >= lo && f <= hi) || math.IsInf(f, 0) {
		t.bad(k, v, want, using(*dst))
		return false
	}
	*dst = f
	return true
}

// budget reads an amount of US dollars: a finite number, not negative.
func (t *table) budget(k string, dst *float64) bool {
	return t.float(k, 0, math.MaxFloat64, "a number of dollars, 0 or more", dst)
}

func (t *table) str(k string, dst *string) bool {
	v, ok := t.get(k)
	if !ok {
		return false
	}
	s, ok := v.(string)
	if !ok {
		t.bad(k, v, "a string", using(*dst))
		return false
	}
	*dst = s
	return true
}

// oneOf reads a string that must be one of allowed.
func (t *table) oneOf(k string, dst *string, allowed ...string) bool {
	v, ok := t.get(k)
	if !ok {
		return false
	}
	s, ok := v.(string)
	if !ok || !slices.Contains(allowed, s) {
		t.bad(k, v, quoteList(allowed), using(*dst))
		return false
	}
	*dst = s
	return true
}

// check reads a string that valid accepts; want says what that is.
func (t *table) check(k, want string, valid func(string) bool, dst *string) bool {
	v, ok := t.get(k)
	if !ok {
		return false
	}
	s, ok := v.(string)
	if !ok || !valid(s) {
		t.bad(k, v, want, using(*dst))
		return false
	}
	*dst = s
	return true
}

// duration reads a positive duration such as "90s".
func (t *table) duration(k string, dst *Duration) bool {
	v, ok := t.get(k)
	if !ok {
		return false
	}
	s, _ := v.(string)
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		t.bad(k, v, `a duration such as "90s" or "10m"`, using(*dst))
		return false
	}
	dst.Duration = d
	return true
}

// stringList reads an array of strings.
func (t *table) stringList(k string, dst *[]string) bool {
	v, ok := t.get(k)
	if !ok {
		return false
	}
	a, _ := v.([]any)
	ss := make([]string, 0, len(a))
	for _, e := range a {
		s, ok := e.(string)
		if !ok {
			a = nil
			break
		}
		ss = append(ss, s)
	}
	if a == nil {
		t.bad(k, v, "an array of strings", using(*dst))
		return false
	}
	*dst = ss
	return true
}

// env reads a table of environment variables, dropping the entries that
// are not NAME = "value". Values are secrets (API keys): no warning shows
// one.
func (t *table) env(k string) map[string]string {
	v, ok := t.get(k)
	if !ok {
		return nil
	}
	et, ok := t.sub(k, v)
	if !ok {
		return nil
	}
	env := map[string]string{}
	for _, name := range sortedKeys(et.m) {
		et.used[name] = true
		s, ok := et.m[name].(string)
		switch {
		case !ok:
			et.bad(name, et.m[name], "a string", "ignored")
		case name == "" || strings.ContainsAny(name, "=\x00"):
			et.d.warn(et.line(name), "%s: not an environment variable name (ignored)", et.key(name))
		case strings.ContainsRune(s, 0):
			et.d.warn(et.line(name), "%s: value holds a NUL byte (ignored)", et.key(name))
		default:
			env[name] = s
		}
	}
	return env
}

func sortedKeys(m map[string]any) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// using says which default replaces an invalid value.
func using(def any) string {
	switch v := def.(type) {
	case string:
		if v == "" {
			return "using none"
		}
		return "using " + strconv.Quote(v)
	case Duration:
		return "using " + v.Duration.String()
	case []string:
		if len(v) == 0 {
			return "using none"
		}
	}
	return fmt.Sprintf("using %v", def)
}

// describe shows a TOML value in a warning: scalars as written (long
// strings cut short), others by their type.
func describe(v any) string {
	switch v := v.(type) {
	case string:
		if len(v) > 40 {
			cut := 40
			for cut > 0 && !utf8.RuneStart(v[cut]) {
				cut--
			}
			v = v[:cut] + "…"
		}
		return strconv.Quote(v)
	case float64:
		return formatFloat(v)
	case int64, bool:
		return fmt.Sprint(v)
	case map[string]any:
		return "a table"
	case []any, []map[string]any:
		return "an array"
	case nil:
		return "nothing"
	}
	return "a date or time"
}

// formatFloat writes f as TOML does: 8.0, nan, +inf.
func formatFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "+inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eE") {
		s += ".0"
	}
	return s
}

func quoteList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(s)
	}
	if len(q) < 2 {
		return strings.Join(q, "")
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}

// validURL reports whether s is an absolute http or https URL.
func validURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// validEnvName reports whether s is a portable environment variable name.
func validEnvName(s string) bool {
	for i, c := range s {
		letter := c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c == '_'
		if !letter && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return s != ""
}
