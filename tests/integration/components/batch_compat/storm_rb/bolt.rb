# A storm.rb Bolt for tests/integration/test_batch_compat.py: logs what reached `process` (see
# ../README.md), then acks it (storm.rb's Bolt does not ack by itself).
require_relative '../storm/storm'

class SeenBolt < Storm::Bolt
  def process(tup)
    log('process ' + [tup.id, tup.component, tup.stream, tup.task, tup.values].to_json)
    ack(tup)
  end
end

SeenBolt.new.run
