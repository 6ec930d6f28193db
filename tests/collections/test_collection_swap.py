"""Re-indexing a document swaps its chunks atomically: a search running meanwhile never comes back empty."""
from __future__ import annotations

import threading
import time

from django.db import connection

from collection_docs import price_list_pdf
from knowledge.collections.models import Chunk, Document
from knowledge.collections.search import chunk_search, or_text
from knowledge.collections.services import collection_create, document_upload
from knowledge.embeddings import embed_query


def test_search_keeps_answering_while_a_document_is_replaced(committed):
    collection = collection_create(name="prices")
    first = document_upload(collection=collection, filename="prices.pdf", data=price_list_pdf(pages=20))
    document_id = first.document.pk
    assert Document.objects.get(pk=document_id).status == "done"  # eager ingestion ran at commit

    question = "How much is a full body massage?"
    embedding = embed_query(question)
    observations: list[tuple[int, frozenset, frozenset]] = []
    errors: list[BaseException] = []
    stop = threading.Event()

    def search_loop():
        try:
            connection.set_tenant(committed)
            while not stop.is_set():
                hits = [hit for hit in chunk_search(keyword_text=or_text(question), content_text=question,
                                                    embedding=embedding, collection_ids=[collection.pk],
                                                    vector_limit=8, keyword_limit=8)
                        if hit.document_id == document_id]
                observations.append((len(hits), frozenset(hit.generation for hit in hits),
                                     frozenset(hit.text.split(" shillings")[0][-5:] for hit in hits
                                               if hit.heading == "Massages")))
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)
        finally:
            connection.close()

    searcher = threading.Thread(target=search_loop)
    searcher.start()
    try:
        time.sleep(0.2)
        for price in ("5,200", "6,100", "4,500"):
            result = document_upload(collection=collection, filename="prices.pdf",
                                     data=price_list_pdf(pages=20, massage_price=price))
            assert (result.changed, Document.objects.get(pk=document_id).status) == (True, "done")
        time.sleep(0.2)
    finally:
        stop.set()
        searcher.join(timeout=30)

    assert errors == []
    assert len(observations) > 20
    assert min(count for count, _, _ in observations) > 0  # never a moment with nothing to find
    assert all(len(generations) == 1 for _, generations, _ in observations)  # never old and new mixed
    seen_generations = set().union(*(generations for _, generations, _ in observations))
    assert {1, 4} <= seen_generations
    document = Document.objects.get(pk=document_id)
    assert (document.live_generation, Chunk.objects.filter(document=document).count()) == (
        4, Chunk.objects.filter(document=document, generation=4, is_live=True).count())
