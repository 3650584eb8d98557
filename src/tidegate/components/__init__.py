"""Pipeline components: one home per source, processor and destination type.

``base`` says what a component is (``Component``) and what it is given
(``BuildContext``, ``RunContext``, ``DeliveryContext``); ``registry`` looks types up;
``catalogue.REGISTRY`` holds every type; ``validation`` turns a configuration's errors
into the v3 error shape. Types live in ``sources/``, ``processors/``, ``destinations/``.
"""
