"""Connected WhatsApp numbers, in the public schema: the webhook routes deliveries by them."""
