package judge

import (
	"strings"
	"testing"
)

func TestErrorSignals(t *testing.T) {
	tests := []struct {
		name string
		text string
		want int
	}{
		{"empty", "", 0},
		{"clean go test", "ok  \tgithub.com/x/y\t0.2s\n--- PASS: TestA (0.00s)\nPASS\n", 0},
		{"go test failure", "--- FAIL: TestA (0.00s)\n    a_test.go:9: got 1\nFAIL\nFAIL\tgithub.com/x/y\t0.2s\n", 3},
		{"go panic", "panic: runtime error: invalid memory address\n\ngoroutine 1 [running]:\n", 1},
		{"python traceback", "Traceback (most recent call last):\n  File \"a.py\", line 1\nValueError: bad\n", 2},
		{"pytest", "FAILED tests/test_a.py::test_x - assert 1 == 2\n===== 1 failed, 3 passed =====\n", 1},
		{"compiler errors", "main.c:3:1: error: expected ';'\nerror[E0308]: mismatched types\nfatal error: x.h: No such file\n", 3},
		{"log levels", "[ERROR] could not connect\nERROR something\ntime=1 level=error msg=boom\n", 3},
		{"java", "Exception in thread \"main\" java.lang.IllegalStateException: no\n\tat A.main(A.java:3)\n", 1},
		{"node", "Uncaught exception: x\nTypeError: undefined is not a function\n", 2},
		{"zero errors", "Found 0 errors.\nno errors found\nTests: 12 passed, failures: 0\nerrors=0\nlinted without errors\n", 0},
		{"zero-error line with a signal word", "FAIL: 0 failures\n", 0},
		{"prose mentions errors", "I added error handling and an errors.New sentinel.\nif err != nil { return fmt.Errorf(\"x: %w\", err) }\ntype ParseError struct{}\n", 0},
		{"lower-case fail is prose", "this used to fail on empty input\n", 0},
		{"a line counts once", "FAIL error: panic: boom\n", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := errorSignals(tt.text); got != tt.want {
				t.Errorf("errorSignals(%q) = %d; want %d", tt.text, got, tt.want)
			}
		})
	}
}

func TestErrorSignals_Bounded(t *testing.T) {
	old := strings.Repeat("error: early\n", 10000)
	recent := strings.Repeat("é fine\n", signalBytes/len("é fine\n")+1)
	if got := errorSignals(old + recent); got != 0 {
		t.Errorf("counted %d signals from before the last %d bytes", got, signalBytes)
	}
	if got := errorSignals(strings.Repeat("FAIL\n", 2*maxSignals)); got != maxSignals {
		t.Errorf("counted %d; want at most %d", got, maxSignals)
	}
}

func BenchmarkErrorSignals(b *testing.B) {
	text := benchOutput()
	b.SetBytes(int64(min(len(text), signalBytes)))
	for b.Loop() {
		errorSignals(text)
	}
}

// Every kind of report must survive the cheap pre-filter.
func TestMayReport(t *testing.T) {
	for _, line := range []string{
		"panic: x", "Traceback (most recent call last)", "FAIL", "FAILED x", "error: x", "Error: x", "ERROR: x",
		"fatal: x", "Fatal error: x", "FATAL: x", "[error] x", "[ERROR] x", "level=error", "ValueError: x",
		"java.lang.IllegalStateException: x", "Exception in thread", "Uncaught exception", "UNHANDLED EXCEPTION", "PANIC x",
	} {
		if !mayReport(line) || errorSignals(line+"\n") != 1 {
			t.Errorf("%q: mayReport %v, %d signals; want true, 1", line, mayReport(line), errorSignals(line+"\n"))
		}
	}
}

// benchOutput is about 64 KiB of agent and test output, mostly ordinary
// lines with an error report now and then.
func benchOutput() string {
	block := strings.Repeat("=== RUN   TestSomething/case\n--- PASS: TestSomething/case (0.00s)\nEditing internal/pkg/file.go\n", 6) +
		"main.go:12:3: error: undefined: x\nFound 0 errors\n"
	return strings.Repeat(block, 64<<10/len(block))
}
