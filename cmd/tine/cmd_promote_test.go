package main

import "testing"

func TestPromote_Flags(t *testing.T) {
	checkRefusals(t, []refusal{
		{[]string{"promote"}, exitUsage, "promote takes 1 argument(s), got 0"},
	})
}
