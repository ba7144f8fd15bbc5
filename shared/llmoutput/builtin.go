package llmoutput

import "fmt"

// TaskAnalysis classifies a task before work starts.
type TaskAnalysis struct {
	TaskType    string   `json:"task_type" enum:"question,code,research,file_operation,system_admin" desc:"What kind of task this is."`
	Complexity  string   `json:"complexity" enum:"simple,moderate,complex" desc:"How much work the task takes."`
	ToolsNeeded []string `json:"tools_needed" desc:"The tools the task needs; [] when none."`
	Approach    string   `json:"approach" desc:"How to go about the task, in a few sentences."`
}

// ErrorAnalysis explains a failure and whether to try again.
type ErrorAnalysis struct {
	ErrorType    string `json:"error_type" enum:"syntax,runtime,logic,permission,network,unknown" desc:"The kind of error."`
	RootCause    string `json:"root_cause" desc:"What caused the error."`
	SuggestedFix string `json:"suggested_fix" desc:"What would fix it."`
	CanRetry     bool   `json:"can_retry" desc:"Whether trying again as is may succeed."`
}

// ConversationSummary condenses a conversation.
type ConversationSummary struct {
	KeyTopics         []string `json:"key_topics" desc:"The main topics discussed."`
	DecisionsMade     []string `json:"decisions_made" desc:"Decisions reached; [] when none."`
	ActionItems       []string `json:"action_items" desc:"Follow-up tasks; [] when none."`
	EntitiesMentioned []string `json:"entities_mentioned" desc:"People, systems, services and other named things."`
	OverallSummary    string   `json:"overall_summary" desc:"The conversation in a few sentences."`
}

// TaskAnalysisSchema is the built-in schema of TaskAnalysis.
func TaskAnalysisSchema() *OutputSchema[TaskAnalysis] {
	return builtin[TaskAnalysis]("task_analysis", "An analysis of a task: its type, complexity, the tools it needs and the approach")
}

// ErrorAnalysisSchema is the built-in schema of ErrorAnalysis.
func ErrorAnalysisSchema() *OutputSchema[ErrorAnalysis] {
	return builtin[ErrorAnalysis]("error_analysis", "An analysis of an error: its type, root cause, a fix, and whether a retry may succeed")
}

// ConversationSummarySchema is the built-in schema of ConversationSummary.
func ConversationSummarySchema() *OutputSchema[ConversationSummary] {
	return builtin[ConversationSummary]("conversation_summary", "A summary of a conversation: topics, decisions, action items, entities and an overview")
}

// builtin builds a schema of a fixed type of this package; it cannot fail
// at run time (the tests build each one), so a failure is a programming
// error.
func builtin[T any](name, description string) *OutputSchema[T] {
	s, err := NewOutputSchema[T](name, description)
	if err != nil {
		panic(fmt.Sprintf("llmoutput: built-in schema %q: %v", name, err))
	}
	return s
}
