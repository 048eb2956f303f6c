"""Sphinx extension: proofs that start with a numbered list keep it as a list.

sphinx-proof 0.4.0 glues "Proof. " onto the first line of a ``{prf:proof}`` body, so a proof
written as numbered steps ("1. ...", "2. ...") collapses into a single paragraph. The book writes
its proofs as numbered steps, so this extension puts "Proof." on a line of its own whenever the
body starts with a list item. It also gives each proof a unique HTML id (sphinx-proof gives every
proof on a page the same id, ``proof``). Everything else about the directive is unchanged.
"""

from __future__ import annotations

import re

from docutils.statemachine import StringList

LIST_START = re.compile(r"^\s*(\d+[.)]|[-*+])\s")


def setup(app):
    app.setup_extension("sphinx_proof")
    from sphinx_proof.directive import ProofDirective

    class StepwiseProofDirective(ProofDirective):
        def run(self):
            if self.content and LIST_START.match(self.content[0]):
                source, offset = self.content.info(0)
                self.content = StringList(["", ""], items=[(source, offset), (source, offset)]) + self.content
            nodes = super().run()
            for section in nodes[0].children:
                if "proof" in section.get("ids", []):
                    section["ids"] = [f"proof-{self.env.new_serialno('prf-proof') + 1}"]
            return nodes

    app.add_directive_to_domain("prf", "proof", StepwiseProofDirective, override=True)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
