# A storm.rb Spout for tests/integration/test_batch_compat.py: logs each `next` (see
# ../README.md); storm.rb answers every command with `sync`.
require_relative '../storm/storm'

class NextSpout < Storm::Spout
  def nextTuple
    log('next')
  end
end

NextSpout.new.run
