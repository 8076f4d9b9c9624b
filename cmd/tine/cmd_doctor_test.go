package main

import "testing"

func TestDoctor_Flags(t *testing.T) {
	checkRefusals(t, []refusal{
		{[]string{"doctor", "x"}, exitUsage, "doctor takes 0 argument(s)"},
		{[]string{"doctor", "--purge", "--rebuild"}, exitUsage, "separate steps"},
		{[]string{"doctor", "--set-aside", "--rebuild"}, exitUsage, "separate steps"},
	})
}
