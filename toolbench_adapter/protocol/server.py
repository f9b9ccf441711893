"""The /virtual server protocol: path, payload fields, fixed answers, the MirrorAPI request format."""

# server/main.py (FastAPI route) and rapidapi_multithread.py (SERVICE_URL default for the local server)
VIRTUAL_PATH = "/virtual"
DEFAULT_PORT = 8080

# server/main.py: class Info (request body); rapidapi_multithread.py builds the same payload
PAYLOAD_FIELDS = ("category", "tool_name", "api_name", "tool_input", "strip", "toolbench_key")
# rapidapi_multithread.py: the key also travels as a header
TOOLBENCH_KEY_HEADER = "toolbench_key"
# rapidapi_multithread.py: --observ_compress_method default
DEFAULT_STRIP = "truncate"

# server/main.py: the name joiner used to split a full function name back to its api part
NAME_JOIN = "_for_"

# server/main.py: the chat_with_user short cut (upstream crashes on it with a NameError; we answer it)
CHAT_WITH_USER_API = "chat_with_user"
CHAT_WITH_USER_RESPONSE = "Chat with user."

# server/main_mirrorapi.py: the user message sent to a vLLM-served MirrorAPI model
MIRRORAPI_USER_TEMPLATE = "API doc:\n{api_doc}\n\nRequest:\n{request}"
# server/main_mirrorapi.py: chat parameters (temperature comes from config_mirrorapi.yml)
MIRRORAPI_TEMPERATURE = 0.1
MIRRORAPI_MAX_TOKENS = 2048
MIRRORAPI_SEED = 42
# server/main_mirrorapi.py (extract_attributes_json): the keys of a MirrorAPI answer
MIRRORAPI_KEYS = ("error", "response")
