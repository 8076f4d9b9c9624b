package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The phases of a TineTask. Pending: not submitted yet; Invalid: its spec
// cannot be submitted (Message says why); Queued, Running, Done, Failed,
// Lost and Skipped are its fleet task's states (docs/cluster.md);
// Canceled: deleted while still queued, so never run.
const (
	PhasePending  = "Pending"
	PhaseInvalid  = "Invalid"
	PhaseQueued   = "Queued"
	PhaseRunning  = "Running"
	PhaseDone     = "Done"
	PhaseFailed   = "Failed"
	PhaseLost     = "Lost"
	PhaseSkipped  = "Skipped"
	PhaseCanceled = "Canceled"
)

// The condition types of a TineTask's status.
const (
	// ConditionSubmitted is true once the task is queued in the fleet.
	ConditionSubmitted = "Submitted"
	// ConditionFinished is true once the task's state is final; its
	// reason is the phase.
	ConditionFinished = "Finished"
)

// TineTask is a fork-run task of a fleet declared as a Kubernetes object:
// tine's controller submits it once (its UID is the task's idempotency
// key), reports the task's progress in its status, and withdraws the task
// when the object is deleted (a running task is stopped).
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=tt,categories=tine
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Task",type=string,JSONPath=`.status.taskID`
// +kubebuilder:printcolumn:name="Node",type=string,JSONPath=`.status.node`
// +kubebuilder:printcolumn:name="Winner",type=string,JSONPath=`.status.winner`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type TineTask struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   TineTaskSpec   `json:"spec"`
	Status TineTaskStatus `json:"status,omitempty"`
}

// TineTaskSpec is what to run: tine submit's flags. It cannot change once
// the object exists: a task is submitted once.
//
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec is immutable: a task is submitted once; create another TineTask"
// +kubebuilder:validation:XValidation:rule="has(self.prompt) || has(self.command)",message="give prompt, command or both"
type TineTaskSpec struct {
	// Repo is the repository the nodes clone: a URL, or a path on the
	// nodes.
	// +kubebuilder:validation:MinLength=1
	Repo string `json:"repo"`
	// Commit is the commit to start from: a full hash, or a branch or tag
	// the controller resolves once (git ls-remote); default HEAD.
	// +optional
	Commit string `json:"commit,omitempty"`
	// Prompt is the task given to every agent.
	// +optional
	Prompt string `json:"prompt,omitempty"`
	// Command is a shell command run as a command agent (tine fork-run
	// --agent-cmd).
	// +optional
	Command string `json:"command,omitempty"`
	// Agent is claude, codex, command or an [agent.NAME] of the
	// repository's tine.toml.
	// +optional
	Agent string `json:"agent,omitempty"`
	// Test is the test command run in each fork once its agent finished.
	// +optional
	Test string `json:"test,omitempty"`
	// Approaches are the forks' approaches, one a fork.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	Approaches []string `json:"approaches,omitempty"`
	// Copies is the number of forks (default: the number of approaches,
	// else 3).
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=64
	Copies int32 `json:"copies,omitempty"`
	// BudgetUSD caps what the task's forks spend together, in US dollars
	// (a decimal, such as "2.50").
	// +optional
	// +kubebuilder:validation:Pattern=`^[0-9]{1,6}(\.[0-9]{1,6})?$`
	BudgetUSD string `json:"budgetUSD,omitempty"`
}

// TineTaskStatus is where the task stands, as the fleet's store says.
type TineTaskStatus struct {
	// Phase is Pending, Invalid, Queued, Running, Done, Failed, Lost,
	// Skipped or Canceled.
	// +optional
	Phase string `json:"phase,omitempty"`
	// Message says why a task is Invalid, Failed, Lost, Skipped or
	// Canceled, or how a Done task ended.
	// +optional
	Message string `json:"message,omitempty"`
	// TaskID is the fleet task's id (tine tasks, tine fetch TASK).
	// +optional
	TaskID string `json:"taskID,omitempty"`
	// Commit is the commit the task starts from, resolved.
	// +optional
	Commit string `json:"commit,omitempty"`
	// Node is the node that took the task.
	// +optional
	Node string `json:"node,omitempty"`
	// Outcome is the fork-run's outcome.
	// +optional
	Outcome string `json:"outcome,omitempty"`
	// Winner is the winning fork's name.
	// +optional
	Winner string `json:"winner,omitempty"`
	// Patch summarizes the winner's changes; nil without a winner.
	// +optional
	Patch *PatchSummary `json:"patch,omitempty"`
	// CostUSD is what the task's forks spent, in US dollars.
	// +optional
	CostUSD string `json:"costUSD,omitempty"`
	// StartedAt and FinishedAt are when a node started and ended it.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`
	// +optional
	FinishedAt *metav1.Time `json:"finishedAt,omitempty"`
	// Conditions are Submitted and Finished.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// PatchSummary is what the winner changed since the task's commit.
type PatchSummary struct {
	// Files, Insertions and Deletions are the winner's diff statistics.
	Files      int32 `json:"files"`
	Insertions int32 `json:"insertions"`
	Deletions  int32 `json:"deletions"`
	// Commits are the winner's commits since the task's commit, oldest
	// first: "hash subject".
	// +optional
	Commits []string `json:"commits,omitempty"`
}

// TineTaskList is a list of TineTasks.
//
// +kubebuilder:object:root=true
type TineTaskList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TineTask `json:"items"`
}
