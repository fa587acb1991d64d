"""A bolt that turns the stdout protection off and writes a raw protocol message to fd 1."""

import os

from multilang import BasicBolt


class Raw(BasicBolt):
    protect_stdout = False

    def process(self, tup):
        os.write(1, b'{"command":"log","msg":"raw on fd 1"}\nend\n')


Raw().run()
