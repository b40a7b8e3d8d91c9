"""Who acts, proven by that person's own secret (issue 50): each person the rules depend on (the
planner under ``policy.approval: required``, an approver, an owner who attests, who executes) holds
a token that opens their own Ed25519 key; what they do is signed with it, and the signature is
what counts, never a typed name, an operating-system account or ``$USER``.

- :mod:`piitracer.identity.people`: the people file (``.piitracer/people.json``, 0600): per person
  the token's slow hash, their public key and their private key sealed under their token.
- :mod:`piitracer.identity.statements`: what a person signs (a canonical JSON statement) and the
  check of a signature with a public key alone.
"""
