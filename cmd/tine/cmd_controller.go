package main

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/spf13/cobra"
	"github.com/tinehq/tine"
	"github.com/tinehq/tine/fleet"
	"github.com/tinehq/tine/kube"
	"k8s.io/client-go/tools/clientcmd"
)

// controllerFlags are tine controller's command line.
type controllerFlags struct {
	kubeconfig, namespace, health string
	poll                          time.Duration
}

func newController(a *app) *cobra.Command {
	var fl controllerFlags
	c := &cobra.Command{
		Use:   "controller [--namespace NS] [--kubeconfig FILE] [--poll D] [--health-addr ADDR]",
		Short: "Run the TineTask controller: Kubernetes objects as fleet tasks",
		Long: `Runs the controller of the TineTask custom resource (tine.dev/v1alpha1,
deploy/controller/): for every new TineTask it queues a task in the fleet's
PostgreSQL ($TINE_FLEET_URL, else the store's when it is PostgreSQL's) as
tine submit does, once (the object's UID is the task's idempotency key),
and keeps the object's status (phase, task, node, winner, the winner's
patch summary, cost, conditions) as the fleet's store says, every --poll
while the task is not final. A TineTask deleted before a node took its task
cancels the task (state canceled); one deleted later leaves its task to
finish, its results in tine tasks and tine fetch.

It reaches the Kubernetes API with --kubeconfig, else $KUBECONFIG or
~/.kube/config, else the pod's service account. --namespace limits it to
one namespace (a Role grants that; deploy/controller/ runs it so). Stops on
SIGINT or SIGTERM.

Exit status: 0 when stopped by a signal, 2 for bad flags or no usable
Kubernetes configuration, 3 when the API server serves no TineTask (the
CustomResourceDefinition is not applied).`,
		Example: `  kubectl apply -k deploy/controller/      # the CRD, RBAC and this controller's Deployment
  TINE_FLEET_URL=postgres://… tine controller --kubeconfig ~/.kube/config --namespace tine`,
		Args: exactArgs(0),
		RunE: func(c *cobra.Command, args []string) error {
			if fl.poll < 100*time.Millisecond {
				return fmt.Errorf("--poll %v: at least 100ms: %w", fl.poll, tine.ErrInvalid)
			}
			rules := clientcmd.NewDefaultClientConfigLoadingRules()
			rules.ExplicitPath = fl.kubeconfig
			cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
			if err != nil {
				return fmt.Errorf("no Kubernetes API to talk to: %v: %w", firstLineOf(err.Error()), tine.ErrInvalid)
			}
			ctx, stop := interruptible(c.Context())
			defer stop()
			return a.withFleet(ctx, func(f *fleet.Fleet) error {
				r := &kube.Reconciler{Fleet: f, Resolve: resolveRepo, Poll: fl.poll}
				log := slog.New(slog.NewTextHandler(a.stderr, nil))
				log.Info("tine controller", "api", cfg.Host, "namespace", fl.namespace, "fleet", f.Where())
				return kube.Run(ctx, cfg, r, kube.Options{Namespace: fl.namespace, HealthAddr: fl.health, Logger: log})
			})
		},
	}
	f := c.Flags()
	f.StringVar(&fl.kubeconfig, "kubeconfig", "", "the Kubernetes client configuration (default $KUBECONFIG, ~/.kube/config, else in-cluster)")
	f.StringVar(&fl.namespace, "namespace", "", "watch TineTasks of this namespace only (default every namespace)")
	f.DurationVar(&fl.poll, "poll", 2*time.Second, "how often an unfinished task's state is read from the fleet")
	f.StringVar(&fl.health, "health-addr", "", "serve /healthz and /readyz on this address (default nowhere)")
	return c
}
