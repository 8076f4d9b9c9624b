package main

import "testing"

func TestChoose_Flags(t *testing.T) {
	checkRefusals(t, []refusal{
		{[]string{"choose"}, exitUsage, "choose needs GROUP"},
		{[]string{"choose", "g", "r", "--discard-all"}, exitUsage, "--discard-all takes no RUN, --merge or --promote"},
		{[]string{"choose", "g", "--discard-all", "--promote"}, exitUsage, "--discard-all takes no RUN"},
		{[]string{"choose", "g", "r"}, exitUsage, "exactly one of --merge or --promote"},
		{[]string{"choose", "g", "r", "--merge", "--promote"}, exitUsage, "exactly one of"},
		{[]string{"choose", "g", "--merge"}, exitUsage, "choose needs RUN"},
		{[]string{"choose", "g", "r", "x"}, exitUsage, "at most 2 argument(s), got 3"},
	})
}
