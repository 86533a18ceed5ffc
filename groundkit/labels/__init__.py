"""Labels from your own LLM, checked by a person (issue 39).

A judge (groundkit/labels/judges.py) answers, for a query and a pooled passage, a grade and the shortest
verbatim quote that answers; every answer is cached by content (cache.py); ``judgments judge`` pools the
runs, asks, resolves the quotes exactly and writes machine judgments (judging.py); ``judgments sample``
and ``judgments review`` draw a random sample for a person and measure the agreement (sheet.py,
agreement.py). No DVC stage imports this package: a model is called only by a person's command.
"""
