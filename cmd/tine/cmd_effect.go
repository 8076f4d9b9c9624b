package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/tinehq/tine/effect"
	"github.com/tinehq/tine/internal/display"
)

func newEffect(a *app) *cobra.Command {
	var key, data string
	var asJSON bool
	c := &cobra.Command{
		Use:   "effect git-push [REMOTE [REFSPEC]] | http METHOD URL | run -- CMD [ARG...]",
		Short: "From inside a source run: ask a person for an external effect, done by the daemon",
		Long: `Asks the tine daemon, with this run's capability, for an effect outside the
run: a push to a git remote, an HTTP request, or a command tine.toml's
[effects] commands declares. Nothing is done until a person approves: the
daemon first resolves exactly what would be sent (the remote's URL and the
commit the refspec names now; the request and its body's digest) and records
it as a pending approval; once approved it does that, outside the run, as the
workspace's owner, and keeps a receipt (tine log). Asked again with the same
--key (default: the digest of the request), nothing is repeated: the answer is
the first request's approval or receipt. Forks may not ask: their work goes
out through a merge or a promotion first.`,
		Example: `  tine effect git-push origin main
  tine effect http POST https://api.example.com/deploy --data '{"env":"staging"}' --key deploy-42
  tine effect run -- ./scripts/deploy.sh staging`,
		Args: minArgs(1, "git-push [REMOTE [REFSPEC]], http METHOD URL or run -- CMD"),
		RunE: func(c *cobra.Command, args []string) error {
			req, err := effectRequest(c, args, data)
			if err != nil {
				return err
			}
			req.Key = key
			cl, run, err := insideClient()
			if err != nil {
				return err
			}
			out, err := cl.Effect(c.Context(), run, req)
			if err != nil {
				return err
			}
			if asJSON {
				return a.printJSON(out)
			}
			fmt.Fprintln(a.stdout, display.Text(out.Summary()))
			return nil
		},
	}
	c.Flags().StringVar(&key, "key", "", "idempotency key: the same key is never done twice (default: the request's digest)")
	c.Flags().StringVar(&data, "data", "", "http: the request body")
	c.Flags().BoolVar(&asJSON, "json", false, "print the answer as JSON")
	return c
}

// effectRequest reads the effect's kind and arguments.
func effectRequest(c *cobra.Command, args []string, data string) (effect.Request, error) {
	r := effect.Request{Kind: args[0]}
	rest := args[1:]
	switch r.Kind {
	case effect.GitPush:
		if len(rest) > 2 {
			return r, usageErr(c, "git-push takes at most REMOTE and REFSPEC")
		}
		if len(rest) > 0 {
			r.Remote = rest[0]
		}
		if len(rest) > 1 {
			r.Refspec = rest[1]
		}
	case effect.HTTP:
		if len(rest) != 2 {
			return r, usageErr(c, "http takes METHOD and URL")
		}
		r.Method, r.URL, r.Body = rest[0], rest[1], data
	case effect.Run:
		if len(rest) == 0 {
			return r, usageErr(c, "run takes the command after --")
		}
		r.Args = rest
	default:
		return r, usageErr(c, "effect git-push, http or run")
	}
	if data != "" && r.Kind != effect.HTTP {
		return r, usageErr(c, "--data is for http")
	}
	return r, nil
}
