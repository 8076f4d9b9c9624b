package main

import "testing"

func TestCombine_Flags(t *testing.T) {
	checkRefusals(t, []refusal{
		{[]string{"combine"}, exitUsage, "combine takes 1 argument(s), got 0"},
		{[]string{"combine", "g"}, exitUsage, "at least one --take FORK:PATH"},
		{[]string{"combine", "g", "--take", "src"}, exitUsage, "--take \"src\": want FORK:PATH"},
		{[]string{"combine", "g", "--take", ":src"}, exitUsage, "want FORK:PATH"},
	})
}
