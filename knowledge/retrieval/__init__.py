"""The retrieval seam: `fetch_snippets` (inline and hybrid modes), trivial turns, relevance and refusal."""
from knowledge.retrieval.filters import FilterError, Filters, filters_clean
from knowledge.retrieval.pipeline import fetch_snippets, prepare_query, retrieve
from knowledge.retrieval.trivial import is_trivial
from knowledge.retrieval.types import Retrieval, RetrievedSnippet, retrieval_from_dict, retrieval_to_dict

__all__ = ["FilterError", "Filters", "Retrieval", "RetrievedSnippet", "fetch_snippets", "filters_clean",
           "is_trivial", "prepare_query", "retrieval_from_dict", "retrieval_to_dict", "retrieve"]
