"""A plain bolt whose library does not speak batch/1, declared `batch: bolt` by mistake."""

from multilang import BasicBolt


class Plain(BasicBolt):
    def process(self, tup):
        pass


Plain().run()
