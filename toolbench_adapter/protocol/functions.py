"""Function (tool) schema construction constants."""

# toolbench/inference/Downstream_tasks/rapidapi_multithread.py (api_json_to_openai_json)
FUNCTION_NAME_MAX_LENGTH = 64  # the LAST 64 characters are kept
DESCRIPTION_MAX_LENGTH = 256
FUNCTION_NAME_JOIN = "_for_"
TYPE_MAP = {"NUMBER": "integer", "STRING": "string", "BOOLEAN": "boolean"}
TYPE_DEFAULT = "string"
FUNCTION_DESCRIPTION_HEAD = 'This is the subfunction for tool "{tool}", you can use this tool.'
FUNCTION_DESCRIPTION_TAIL = 'The description of this function is: "{description}"'

# toolbench/utils.py (change_name)
RESERVED_NAMES = ("from", "class", "return", "false", "true", "id", "and")
RESERVED_PREFIX = "is_"
# toolbench/utils.py (standardize): digits first -> prefixed
DIGIT_PREFIX = "get_"

# rapidapi_multithread.py: the Finish function, appended last to every function list
FINISH_NAME = "Finish"
GIVE_ANSWER = "give_answer"
GIVE_UP = "give_up_and_restart"
FINISH_DESCRIPTION = (
    "If you believe that you have obtained a result that can answer the task, please call this function "
    "to provide the final answer. Alternatively, if you recognize that you are unable to proceed with the "
    "task in the current state, call this function to restart. Remember: you must ALWAYS call this "
    "function at the end of your attempt, and the only part that will be shown to the user is the final "
    "answer, so it should contain sufficient information."
)
FINAL_ANSWER_DESCRIPTION = (
    'The final answer you want to give the user. You should have this field if "return_type"=="give_answer"'
)


def finish_function() -> dict:
    """A fresh copy of the inner (legacy) Finish function dict, keys in upstream order."""
    return {
        "name": FINISH_NAME,
        "description": FINISH_DESCRIPTION,
        "parameters": {
            "type": "object",
            "properties": {
                "return_type": {"type": "string", "enum": [GIVE_ANSWER, GIVE_UP]},
                "final_answer": {"type": "string", "description": FINAL_ANSWER_DESCRIPTION},
            },
            "required": ["return_type"],
        },
    }
