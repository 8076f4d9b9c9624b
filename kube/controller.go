package kube

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/fleet"
	"github.com/tinehq/tine/forkrun"
	"github.com/tinehq/tine/kube/v1alpha1"
)

// Finalizer holds a TineTask's deletion until the controller has
// canceled its task, if no node took it yet.
const Finalizer = "tine.dev/cancel-task"

// KeyPrefix starts the idempotency key of a TineTask's task; the object's
// UID follows.
const KeyPrefix = "k8s:"

// Fleet is what the controller needs of the fleet; *fleet.Fleet has it.
type Fleet interface {
	Submit(ctx context.Context, s fleet.Spec) (id string, dup bool, err error)
	Task(ctx context.Context, id string) (*fleet.Task, error)
	TaskByKey(ctx context.Context, key string) (string, error)
	Withdraw(ctx context.Context, id, reason string) (*fleet.Withdrawal, error)
}

var _ Fleet = (*fleet.Fleet)(nil)

// Resolver returns a task's repository as the nodes clone it and its
// commit (default HEAD) as a full hash; an error wrapping
// tine.ErrNotFound or tine.ErrInvalid makes the TineTask Invalid, any
// other is retried.
type Resolver func(ctx context.Context, repo, commit string) (string, string, error)

// Reconciler keeps each TineTask's task in the fleet: it submits a new
// one's, follows it into the status and cancels it when the object is
// deleted before a node took it.
type Reconciler struct {
	Client  client.Client
	Fleet   Fleet
	Resolve Resolver
	// Poll is how often an unfinished task's state is read again.
	Poll time.Duration
}

// SetupWithManager registers r with m for TineTasks.
func (r *Reconciler) SetupWithManager(m ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(m).For(&v1alpha1.TineTask{}).Named("tinetask").Complete(r)
}

// Reconcile brings one TineTask and its task in line.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var tt v1alpha1.TineTask
	if err := r.Client.Get(ctx, req.NamespacedName, &tt); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !tt.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.finalize(ctx, &tt)
	}
	if controllerutil.AddFinalizer(&tt, Finalizer) {
		if err := r.Client.Update(ctx, &tt); err != nil {
			return requeueOnConflict(err)
		}
	}
	st := tt.Status.DeepCopy()
	var err error
	if st.TaskID == "" && st.Phase != v1alpha1.PhaseInvalid {
		err = r.submit(ctx, &tt, st)
	} else if st.TaskID != "" {
		err = r.follow(ctx, st, tt.Generation)
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	if !equality.Semantic.DeepEqual(st, &tt.Status) {
		tt.Status = *st
		if err := r.Client.Status().Update(ctx, &tt); err != nil {
			return requeueOnConflict(err)
		}
	}
	if final(st.Phase) {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{RequeueAfter: r.Poll}, nil
}

// requeueOnConflict retries soon after a write that lost a race with
// another (the object changed since it was read), and returns any other
// error for the controller's backoff.
func requeueOnConflict(err error) (ctrl.Result, error) {
	if apierrors.IsConflict(err) {
		return ctrl.Result{RequeueAfter: 100 * time.Millisecond}, nil
	}
	return ctrl.Result{}, err
}

// submit queues tt's task, keyed by tt's UID so that a submit repeated
// (the status write lost, the controller restarted) queues nothing new,
// and records it in st.
func (r *Reconciler) submit(ctx context.Context, tt *v1alpha1.TineTask, st *v1alpha1.TineTaskStatus) error {
	spec, err := r.spec(ctx, tt)
	if errors.Is(err, tine.ErrInvalid) || errors.Is(err, tine.ErrNotFound) {
		st.Phase, st.Message = v1alpha1.PhaseInvalid, err.Error()
		setCondition(st, tt.Generation, v1alpha1.ConditionSubmitted, false, v1alpha1.PhaseInvalid, err.Error())
		return nil
	}
	if err != nil {
		return err
	}
	id, _, err := r.Fleet.Submit(ctx, spec)
	if err != nil {
		return err
	}
	log.FromContext(ctx).Info("submitted", "task", id)
	st.TaskID, st.Commit, st.Phase, st.Message = id, spec.Commit, v1alpha1.PhaseQueued, ""
	setCondition(st, tt.Generation, v1alpha1.ConditionSubmitted, true, v1alpha1.PhaseQueued, "task "+id+" queued in the fleet")
	return r.follow(ctx, st, tt.Generation)
}

// spec is tt's task as tine submit would queue it.
func (r *Reconciler) spec(ctx context.Context, tt *v1alpha1.TineTask) (fleet.Spec, error) {
	s := tt.Spec
	req := forkrun.Request{Prompt: s.Prompt, Approaches: s.Approaches, Agent: s.Agent, AgentCmd: s.Command}
	if req.Prompt == "" {
		req.Prompt = s.Command // a command agent's task is its command, as tine submit has it
	}
	if req.Prompt == "" {
		return fleet.Spec{}, fmt.Errorf("give prompt, command or both: %w", tine.ErrInvalid)
	}
	if s.Copies > 0 {
		req.N = new(int(s.Copies))
	}
	if s.Test != "" {
		req.Test = new(s.Test)
	}
	if s.BudgetUSD != "" {
		b, err := strconv.ParseFloat(s.BudgetUSD, 64)
		if err != nil || b < 0 {
			return fleet.Spec{}, fmt.Errorf("budgetUSD %q: a decimal number of US dollars: %w", s.BudgetUSD, tine.ErrInvalid)
		}
		req.AggregateUSD = &b
	}
	repo, commit, err := r.Resolve(ctx, s.Repo, s.Commit)
	if err != nil {
		return fleet.Spec{}, err
	}
	return fleet.Spec{Repo: repo, Commit: commit, Request: req, Key: KeyPrefix + string(tt.UID),
		By: "TineTask " + tt.Namespace + "/" + tt.Name}, nil
}

// follow reads st's task from the fleet into st.
func (r *Reconciler) follow(ctx context.Context, st *v1alpha1.TineTaskStatus, gen int64) error {
	t, err := r.Fleet.Task(ctx, st.TaskID)
	if err != nil {
		return err
	}
	report(st, t, gen)
	return nil
}

// finalize withdraws tt's task, as deleting a Job stops its pods: a
// queued one never runs, a running one is stopped by its node (its
// forks' work kept there), and lets the object go. A task that ended is
// left as it is: its results stay in the fleet (tine tasks, tine fetch).
func (r *Reconciler) finalize(ctx context.Context, tt *v1alpha1.TineTask) error {
	if !controllerutil.ContainsFinalizer(tt, Finalizer) {
		return nil
	}
	id := tt.Status.TaskID
	if id == "" { // submitted, maybe, before the status was written
		var err error
		id, err = r.Fleet.TaskByKey(ctx, KeyPrefix+string(tt.UID))
		if err != nil && !errors.Is(err, tine.ErrNotFound) {
			return err
		}
	}
	if id != "" {
		w, err := r.Fleet.Withdraw(ctx, id, fmt.Sprintf("canceled: TineTask %s/%s deleted", tt.Namespace, tt.Name))
		switch {
		case errors.Is(err, tine.ErrNotFound):
		case err != nil:
			return err
		default:
			log.FromContext(ctx).Info("deleted", "task", id, "was", w.Was, "state", w.State)
		}
	}
	controllerutil.RemoveFinalizer(tt, Finalizer)
	return client.IgnoreNotFound(r.Client.Update(ctx, tt))
}

// phases maps a task's state to a TineTask's phase.
var phases = map[string]string{
	fleet.TaskQueued:   v1alpha1.PhaseQueued,
	fleet.TaskRunning:  v1alpha1.PhaseRunning,
	fleet.TaskDone:     v1alpha1.PhaseDone,
	fleet.TaskFailed:   v1alpha1.PhaseFailed,
	fleet.TaskLost:     v1alpha1.PhaseLost,
	fleet.TaskSkipped:  v1alpha1.PhaseSkipped,
	fleet.TaskCanceled: v1alpha1.PhaseCanceled,
}

// final reports whether phase is final: nothing more will change.
func final(phase string) bool {
	switch phase {
	case v1alpha1.PhaseInvalid, v1alpha1.PhaseDone, v1alpha1.PhaseFailed, v1alpha1.PhaseLost,
		v1alpha1.PhaseSkipped, v1alpha1.PhaseCanceled:
		return true
	}
	return false
}

// report writes task t into st.
func report(st *v1alpha1.TineTaskStatus, t *fleet.Task, gen int64) {
	st.Phase = phases[t.State]
	st.Message, st.Node, st.Outcome, st.Winner, st.Commit = t.Reason, t.Node, t.Outcome, t.Winner, t.Commit
	if st.Message == "" && t.Report != nil {
		st.Message = t.Report.OutcomeDetail
	}
	st.CostUSD = strconv.FormatFloat(t.CostUSD, 'f', 4, 64)
	st.StartedAt, st.FinishedAt = metaTime(t.StartedAt), metaTime(t.FinishedAt)
	st.Patch = patchSummary(t)
	if t.Final() {
		setCondition(st, gen, v1alpha1.ConditionFinished, true, st.Phase, firstOr(st.Message, "task "+t.ID+" "+t.State))
	} else {
		setCondition(st, gen, v1alpha1.ConditionFinished, false, st.Phase, "task "+t.ID+" "+t.State)
	}
}

// patchSummary is the winner's diff statistics and commits; nil without
// a winner's patch.
func patchSummary(t *fleet.Task) *v1alpha1.PatchSummary {
	if !t.HasPatch {
		return nil
	}
	p := &v1alpha1.PatchSummary{Commits: t.Commits}
	if t.Report != nil {
		for _, f := range t.Report.Forks {
			if f.Name == t.Winner {
				p.Files, p.Insertions, p.Deletions = int32(f.FilesChanged), int32(f.LinesAdded), int32(f.LinesDeleted)
			}
		}
	}
	return p
}

// setCondition sets st's condition typ, its transition time kept while
// its status stays.
func setCondition(st *v1alpha1.TineTaskStatus, gen int64, typ string, ok bool, reason, msg string) {
	status := metav1.ConditionFalse
	if ok {
		status = metav1.ConditionTrue
	}
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg, ObservedGeneration: gen})
}

// metaTime is t for the API; nil for nil.
func metaTime(t *time.Time) *metav1.Time {
	if t == nil {
		return nil
	}
	return &metav1.Time{Time: t.UTC().Truncate(time.Second)}
}

// firstOr is s, or else when s is empty.
func firstOr(s, orElse string) string {
	if s == "" {
		return orElse
	}
	return s
}
