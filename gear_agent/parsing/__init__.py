"""Parsers of model replies: JSON, triples, extraction and entity replies, reasoner verdicts,
short answers."""

from gear_agent.parsing.entities_reply import parse_entities_reply
from gear_agent.parsing.errors import ParseError
from gear_agent.parsing.extraction_reply import ExtractionReply, parse_extraction_reply
from gear_agent.parsing.json_reply import extract_json
from gear_agent.parsing.reasoner_reply import ReasonerVerdict, parse_reasoner_reply
from gear_agent.parsing.short_reply import parse_short_reply
from gear_agent.parsing.triples import ParsedTriples, clean_part, parse_triples, triples_from_items

__all__ = [
    "ExtractionReply",
    "ParseError",
    "ParsedTriples",
    "ReasonerVerdict",
    "clean_part",
    "extract_json",
    "parse_entities_reply",
    "parse_extraction_reply",
    "parse_reasoner_reply",
    "parse_short_reply",
    "parse_triples",
    "triples_from_items",
]
