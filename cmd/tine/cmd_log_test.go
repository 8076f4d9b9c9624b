package main

import "testing"

func TestLog_Flags(t *testing.T) {
	checkRefusals(t, []refusal{
		{[]string{"log"}, exitUsage, "log takes 1 argument(s), got 0"},
	})
}
