"""Environment step protocol: status codes, Finish observations, server error strings."""

# toolbench/inference/Downstream_tasks/rapidapi_multithread.py (rapidapi_wrapper._step)
STATUS_NORMAL = 0
STATUS_NO_SUCH_FUNCTION = 1
STATUS_INPUT_ERROR = 2
STATUS_FINAL_ANSWER = 3
STATUS_GIVE_UP = 4
STATUS_TIMEOUT = 5
STATUS_NOT_WORKING = 6
STATUS_UNAUTHORIZED = 7  # upstream docstring says "not subscribed": the mapping is swapped
STATUS_UNSUBSCRIBED = 8  # upstream docstring says "unauthorized"
STATUS_TOO_MANY_REQUESTS = 9
STATUS_RATE_LIMIT = 10
STATUS_MESSAGE_ERROR = 11
STATUS_REQUEST_INVALID = 12

STATUS_NAMES = {
    0: "normal",
    1: "no_such_function",
    2: "input_error",
    3: "final_answer",
    4: "give_up",
    5: "timeout",
    6: "api_not_working",
    7: "unauthorized",
    8: "unsubscribed",
    9: "too_many_requests",
    10: "rate_limit",
    11: "message_error",
    12: "request_invalid",
}

# server error string -> status code (rapidapi_wrapper._step)
SERVER_ERROR_STATUS = {
    "API not working error...": STATUS_NOT_WORKING,
    "Unauthorized error...": STATUS_UNAUTHORIZED,
    "Unsubscribed error...": STATUS_UNSUBSCRIBED,
    "Too many requests error...": STATUS_TOO_MANY_REQUESTS,
    "Rate limit per minute error...": STATUS_RATE_LIMIT,
    "Message error...": STATUS_MESSAGE_ERROR,
}
TIMEOUT_ERROR = "Timeout error..."
NO_SUCH_FUNCTION_ERROR = "No such function name: {name}"
REQUEST_INVALID_STATUS_ERROR = "request invalid, data error. status_code={status_code}"
REQUEST_INVALID_ERROR = "request invalid, data error"

# Finish handling (rapidapi_wrapper._step): exact observation strings, several are not valid JSON
FINISH_NO_RETURN_TYPE = '{error:"must have "return_type""}'
FINISH_GIVE_UP = '{"response":"chose to give up and restart"}'
FINISH_NO_FINAL_ANSWER = '{error:"must have "final_answer""}'
FINISH_SUCCESS = '{"response":"successfully giving the final answer."}'
FINISH_BAD_RETURN_TYPE = '{error:""return_type" is not a valid choice"}'
# the fallback heuristic's markers (exactly one space after the colon)
FINISH_RETURN_TYPE_MARKER = '"return_type": "'
FINISH_FINAL_ANSWER_MARKER = '"final_answer": "'
FINISH_RETURN_TYPE_END = '",'

# toolbench/inference/Downstream_tasks/rapidapi_multithread.py: tool name written for code 1
INVALID_FUNCTION_NAME = "invalid_hallucination_function_name"

# rapidapi_multithread.py (step): observations longer than this are cut and "..." appended
MAX_OBSERVATION_LENGTH = 1024
TRUNCATION_SUFFIX = "..."

# server/main.py: the virtual server's own answers
TOOL_INPUT_PARSE_ERROR = "Tool input parse error...\n"
FAKE_RESPONSE_FAILED = "Failed to generate fake response"
