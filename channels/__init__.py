"""Where customers reach the assistant besides the API: WhatsApp Cloud API, email drafts, and hand-off alerts.

Each channel turns what arrives into a normal chat turn (conversations.services.turn_run) and sends the answer
back its own way; nothing here decides what the answer is.
"""
