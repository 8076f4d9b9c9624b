// Command tine-controller runs the TineTask controller: Kubernetes
// objects (tine.dev/v1alpha1 TineTask) as the fleet's tasks. It is a
// binary of its own so that tine, which every developer runs many times
// a minute, links none of Kubernetes' client (docs/architecture.md).
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/errcode"
	"github.com/tinehq/tine/fleet"
	"github.com/tinehq/tine/internal/buildinfo"
	"github.com/tinehq/tine/kube"
	"github.com/tinehq/tine/store"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run executes the command line args and returns the exit status
// (errcode.Exit's, as tine's: docs/cli.md).
func run(args []string, stdout, stderr io.Writer) int {
	root := newRoot(stderr)
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.Execute()
	if err != nil {
		fmt.Fprintf(stderr, "tine-controller: %s\n", errLine(err))
	}
	return errcode.Exit(err)
}

// errLine is err as the one line printed: its first line, without the
// category its sentinel adds (": invalid argument"), which the exit
// status carries already.
func errLine(err error) string {
	s := firstLine(err.Error())
	if k := errcode.Of(err); k.Err != nil {
		s = strings.TrimSuffix(s, ": "+k.Err.Error())
	}
	return s
}

// flags are tine-controller's command line.
type flags struct {
	kubeconfig, namespace, health string
	poll                          time.Duration
}

func newRoot(stderr io.Writer) *cobra.Command {
	var fl flags
	c := &cobra.Command{
		Use:   "tine-controller [--namespace NS] [--kubeconfig FILE] [--poll D] [--health-addr ADDR]",
		Short: "Run the TineTask controller: Kubernetes objects as fleet tasks",
		Long: `Runs the controller of the TineTask custom resource (tine.dev/v1alpha1,
deploy/controller/): for every new TineTask it queues a task in the fleet's
PostgreSQL ($TINE_FLEET_URL, else $TINE_STORE_URL when it is PostgreSQL's)
as tine submit does, once (the object's UID is the task's idempotency key),
and keeps the object's status (phase, task, node, winner, the winner's
patch summary, cost, conditions) as the fleet's store says, every --poll
while the task is not final. Deleting a TineTask withdraws its task, as
deleting a Job stops its pods: a queued task never runs, a running one is
stopped by its node (its forks' work kept there), both recorded canceled;
one that ended stays as it is, its results in tine tasks and tine fetch.

It reaches the Kubernetes API with --kubeconfig, else $KUBECONFIG or
~/.kube/config, else the pod's service account. --namespace limits it to
one namespace (a Role grants that; deploy/controller/ runs it so). It keeps
no state of its own. Stops on SIGINT or SIGTERM.

Exit status: 0 when stopped by a signal, 2 for bad flags, no fleet database
or no usable Kubernetes configuration, 3 when the API server serves no
TineTask (the CustomResourceDefinition is not applied).`,
		Example: `  kubectl apply -k deploy/controller/      # the CRD, RBAC and this controller's Deployment
  TINE_FLEET_URL=postgres://… tine-controller --kubeconfig ~/.kube/config --namespace tine`,
		Version:       buildinfo.Read().Short(),
		SilenceUsage:  true,
		SilenceErrors: true,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("tine-controller takes no arguments, got %q (see tine-controller --help): %w", args, tine.ErrInvalid)
			}
			return nil
		},
		RunE: func(c *cobra.Command, _ []string) error {
			return fl.run(c.Context(), stderr)
		},
	}
	c.SetVersionTemplate("tine-controller " + strings.TrimPrefix(buildinfo.Read().String(), "tine ") + "\n")
	c.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return fmt.Errorf("%v (see tine-controller --help): %w", err, tine.ErrInvalid)
	})
	addFlags(c.Flags(), &fl)
	return c
}

// addFlags defines fl's flags in f.
func addFlags(f *pflag.FlagSet, fl *flags) {
	f.StringVar(&fl.kubeconfig, "kubeconfig", "", "the Kubernetes client configuration (default $KUBECONFIG, ~/.kube/config, else in-cluster)")
	f.StringVar(&fl.namespace, "namespace", "", "watch TineTasks of this namespace only (default every namespace)")
	f.DurationVar(&fl.poll, "poll", 2*time.Second, "how often an unfinished task's state is read from the fleet")
	f.StringVar(&fl.health, "health-addr", "", "serve /healthz and /readyz on this address (default nowhere)")
}

// run runs the controller until SIGINT or SIGTERM.
func (fl flags) run(ctx context.Context, stderr io.Writer) error {
	if fl.poll < 100*time.Millisecond {
		return fmt.Errorf("--poll %v: at least 100ms: %w", fl.poll, tine.ErrInvalid)
	}
	cfg, err := fl.restConfig()
	if err != nil {
		return err
	}
	url, err := fleetURL()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	f, err := fleet.Open(ctx, url)
	if err != nil {
		return err
	}
	defer f.Close()
	r := &kube.Reconciler{Fleet: f, Resolve: fleet.ResolveRepo, Poll: fl.poll}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	log.Info("tine-controller", "api", cfg.Host, "namespace", fl.namespace, "fleet", f.Where())
	return kube.Run(ctx, cfg, r, kube.Options{Namespace: fl.namespace, HealthAddr: fl.health, Logger: log})
}

// restConfig is how the controller reaches the Kubernetes API.
func (fl flags) restConfig() (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = fl.kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("no Kubernetes API to talk to: %v: %w", firstLine(err.Error()), tine.ErrInvalid)
	}
	return cfg, nil
}

// fleetURL is the fleet's database: $TINE_FLEET_URL, else $TINE_STORE_URL
// when it names PostgreSQL (the controller has no state directory, so no
// config.toml to read a store's URL from).
func fleetURL() (string, error) {
	if u := os.Getenv(fleet.EnvURL); u != "" {
		return u, nil
	}
	if u := os.Getenv(store.EnvURL); u != "" {
		if kind, err := store.Kind(u); err == nil && kind == "postgres" {
			return u, nil
		}
	}
	return "", fmt.Errorf("tine-controller needs the fleet's PostgreSQL: set %s=postgres://…: %w", fleet.EnvURL, tine.ErrInvalid)
}

// firstLine is s up to its first line break.
func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}
