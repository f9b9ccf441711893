"""Exact strings of the upstream evaluation scripts: labels, step markers, file headers, judge functions."""

# toolbench/tooleval/evaluators/registered_cls/rtl.py (AnswerStatus enum, stored as str(enum))
ANSWER_STATUS_PREFIX = "AnswerStatus."
SOLVED = "Solved"
UNSURE = "Unsure"
UNSOLVED = "Unsolved"
ANSWER_STATUSES = (UNSURE, UNSOLVED, SOLVED)  # order of the config.yaml enum
# rtl.py (check_is_solved): the reason given when no judge call is made
EMPTY_FINAL_ANSWER_REASON = "Empty final answer!"
# rtl.py (check_is_solved): a final answer containing this substring is Unsolved without a call
GIVE_UP_MARKER = "give_up_and_restart"

# toolbench/tooleval/eval_pass_rate.py: a final step without this substring is Unsolved without a call
FINISH_IN_FINAL_STEP = "'name': 'Finish'"
# eval_pass_rate.py (newer version): the reason recorded for that case
NO_ANSWER_REASON = "No answer"
# toolbench/tooleval/utils.py (get_steps)
STEP_PREFIX = "Step {n}: "
FINAL_STEP_PREFIX = "Final step: "

# evaluators/tooleval_gpt-3.5-turbo_default/config.yaml: the judge functions of the pass-rate decision
CHECK_ANSWER_STATUS = "check_answer_status"
PARSE_ANSWER_STATUS = "parse_answer_status"
ANSWER_STATUS_FIELD = "answer_status"
# evaluators/registered_cls/tooleval.py (function_call with return_reason=True): the added property
REASON_FIELD = "reason"
REASON_PROPERTY = {"type": "string", "description": "explain your answer."}
# rtl.py (function_call template parsing): <function><name>…</name><description>…</description></function>
TEMPLATE_FUNCTION_RE = r"<function>(.*?)</function>"
TEMPLATE_NAME_RE = r"<name>(.*?)</name>"
TEMPLATE_DESCRIPTION_RE = r"<description>(.*?)</description>"
# evaluators/__init__.py (load_registered_automatic_evaluator): files of an evaluator folder
EVALUATOR_CONFIG_FILE = "config.yaml"
DEFAULT_UPSTREAM_EVALUATOR = "tooleval_gpt-3.5-turbo_default"

# eval_pass_rate.py (write_results, the version that wrote data_example/pass_rate_results): CSV header
PASS_RATE_CSV_HEADER = ("query", "available_tools", "model_intermediate_steps", "model_final_step", "model",
                        "query_id", "is_solved")
# eval_preference.py (write_results): CSV header; label 1 = reference preferred, 2 = output, 3 = tie
PREFERENCE_CSV_HEADER = ("query", "available_tools", "ref_model_intermediate_steps", "ref_model_final_step",
                         "output_model_intermediate_steps", "output_model_final_step", "preference_label",
                         "query_id", "ref_model", "output_model")
PREFERENCE_REF, PREFERENCE_OUTPUT, PREFERENCE_TIE = 1, 2, 3
# eval_preference.py: per-query round markers in the preference JSON
ROUND_KEY = "round_{i}"
ROUND_COMPLETE = "complete"
ROUND_INCOMPLETE = "incomplete"

# toolbench/tooleval/fac_eval.py (scoring): lowercase output; "unsolved" -> 0, else "solved" -> 1, else 0
FAC_UNSOLVED_MARKER = "unsolved"
FAC_SOLVED_MARKER = "solved"
# fac_eval.py: a final answer starting with these two characters is parsed as JSON and unwrapped
FAC_JSON_PREFIX = "{\\"
# fac_eval.py: the evaluation text recorded for an empty final answer
FAC_EMPTY_ANSWER_TEXT = "Answer Status: \nUnsolved\nReason: Parsing error"

# toolbench/tooleval/convert_to_answer_format.py: the converter's RNG (random.seed(42) at import)
CONVERTER_SEED = 42
# convert_to_answer_format.py (process_invalid_data): node types of answer trees
NODE_ACTION = "Action"
NODE_ACTION_INPUT = "Action Input"
NODE_THOUGHT = "Thought"

# toolbench/tooleval/eval_preference.py (annotate_preference) and the evaluators' config.yaml: the comparison
# function, its verdict field, and how each answer is cut before it is shown
SELECT_BETTER_ANSWER = "select_better_answer"
INDEX_FIELD = "index"
FINAL_ANSWER_LIMIT = 1000
ANSWER_DETAILS_LIMIT = 3000  # a slice of the answer_details *list* (one root node): in effect no cut
DROPPED_ANSWER_KEY = "method"
