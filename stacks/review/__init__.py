"""The offline tools: the same program under the SDK's mock engine, recorded, rendered, checked against
the policy rules, diffed with a change plan, summarized."""
