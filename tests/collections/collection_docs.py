"""Realistic documents for the collections tests: a spa's guide in Markdown, HTML and a multi-page PDF."""
from knowledge.collections.testing import PdfLine, make_pdf

GUIDE_MD = b"""# Aria Spa Guest Guide

Welcome to Aria Spa. This guide answers the questions guests ask most often.

## Arrival

Please arrive fifteen minutes before your appointment. Late arrivals may have a shorter treatment.

### Parking

Free parking is available behind the building. The car park closes at nine in the evening.

## Treatments

### Hot stone massage

The hot stone massage uses heated basalt stones. It lasts ninety minutes and suits guests with muscle tension.

### Facials

Our facials use organic products from Kenyan farms. Tell the therapist about any allergies before you start.
"""

FAQ_HTML = b"""<!doctype html>
<html><head><meta charset="utf-8"><title>Aria Spa delivery FAQ</title>
<style>body { font-family: sans-serif }</style><script>console.log("not content")</script></head>
<body><nav><a href="/">Home</a> <a href="/faq">FAQ</a></nav>
<h1>Gift box delivery</h1>
<p>We deliver gift boxes across Nairobi within two working days.</p>
<h2>Delivery fees</h2>
<p>Delivery inside the CBD is free. Deliveries to Karen or Runda cost 500 shillings.</p>
<h2>Returns</h2>
<p>Unopened gift boxes can be returned within <strong>seven days</strong> for a full refund.</p>
</body></html>
"""


def price_list_pdf(*, pages: int = 3, massage_price: str = "4,500") -> bytes:
    """A multi-page price list: a title, one section per page, body text, headings in a larger font."""
    sections = [
        ("Massages", f"A full body massage of sixty minutes costs {massage_price} shillings. "
                     "A back and shoulder massage of thirty minutes costs 2,500 shillings."),
        ("Facials", "The signature facial costs 3,800 shillings and takes fifty minutes. "
                    "A express facial costs 2,000 shillings."),
        ("Nail care", "A manicure costs 1,200 shillings. A pedicure with a foot soak costs 1,800 shillings."),
        ("Packages", "The couples package includes two massages and a private sauna for 9,000 shillings."),
        ("Gift vouchers", "Gift vouchers are valid for twelve months from the date of purchase."),
    ]
    content = []
    for number in range(pages):
        heading, body = sections[number % len(sections)]
        lines = [PdfLine("Aria Spa Price List", 20)] if number == 0 else []
        lines += [PdfLine(heading, 15), body]
        if number == 0:
            lines.append("Prices include VAT. Tips are at your discretion.")
        lines.append(PdfLine(f"Aria Spa - price list - page {number + 1} of {pages}", 9))  # a running footer
        content.append(lines)
    return make_pdf(content, title="Aria Spa Price List 2026")
