"""Answer files in the upstream raw format, and their conversion to the converted (judged) format."""

from .convert import Converter, convert_folder
from .read import AnswerFile, iter_answer_files, iter_run_folder, load_answer

__all__ = ["AnswerFile", "Converter", "convert_folder", "iter_answer_files", "iter_run_folder", "load_answer"]
