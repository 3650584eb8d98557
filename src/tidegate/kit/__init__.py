"""What several domains share and none of them owns: the outbound-address guard, request
body decoding, webhook signatures, the live tap registry. Below every domain; imports only
the HTTP kit, the libraries and the foundation, so it can close no cycle among domains."""
