package main

import "testing"

func TestCell_Flags(t *testing.T) {
	checkRefusals(t, []refusal{
		{[]string{"cell", "run", "r"}, exitUsage, "cell run takes RUN, then -- and the command"},
		{[]string{"cell", "run", "r", "--write", "out", "--"}, exitUsage, "cell run takes RUN, then -- and the command"},
		{[]string{"cell", "run", "r", "make"}, exitUsage, "cell run takes RUN, then -- and the command"},
		{[]string{"cell", "show"}, exitUsage, "show takes 1 argument(s)"},
		{[]string{"cell", "promote"}, exitUsage, "promote takes 1 argument(s)"},
		{[]string{"cell", "replay", "a", "b"}, exitUsage, "replay takes 1 argument(s)"},
	})
}
