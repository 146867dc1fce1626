#include "test/tp/tp_support.h"

#include "runtime/comm/mpi_communicator.h"
#include "test/support/test_support.h"

#include <gtest/gtest.h>

#include <cstring>

namespace cbc::test {

std::shared_ptr<rt::Communicator> gComm;

std::optional<rt::Artefact> shareArtefact(const std::string &configPath, driver::CompileOptions options,
                                          bool expertParallel, std::string &why, bool &failed) {
  std::vector<uint8_t> bytes;
  if (gComm->rank() == 0) {
    // One status byte, then the artefact or the reason; every rank moves on together, rank 0
    // failing or not.
    auto answer = [&](uint8_t status, const char *text, size_t n) {
      bytes.push_back(status);
      bytes.insert(bytes.end(), text, text + n);
    };
    try {
      options.tp = gComm->size();
      options.ep = expertParallel ? gComm->size() : 1;
      auto result = driver::compileConfig(readFile(configPath), options);
      answer(1, reinterpret_cast<const char *>(result.artefact.data()), result.artefact.size());
    } catch (const driver::OptionError &e) {
      answer(0, e.what(), std::strlen(e.what()));
    } catch (const std::exception &e) {
      answer(2, e.what(), std::strlen(e.what()));
    }
  }
  gComm->broadcast(bytes, true);
  if (bytes.empty() || bytes[0] != 1) {
    why.assign(bytes.begin() + (bytes.empty() ? 0 : 1), bytes.end());
    failed = !bytes.empty() && bytes[0] == 2;
    return std::nullopt;
  }
  return rt::Artefact::fromBytes(bytes.data() + 1, bytes.size() - 1);
}

bool shareFlag(bool value) {
  std::vector<uint8_t> flag = {(uint8_t)value};
  gComm->broadcast(flag, true);
  return !flag.empty() && flag[0];
}

bool hasExperts(const rt::Artefact &a) {
  for (const rt::Instr &in : a.program.instrs)
    if (in.opcode == fb::Opcode::MoeExperts)
      return true;
  return false;
}

int runOnRanks(int argc, char **argv) {
  ::testing::InitGoogleTest(&argc, argv);
  gComm = rt::launchedByMpi() ? rt::openMpi(120) : rt::singleRank();
  if (gComm->rank() > 0) {
    auto &listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  int status = RUN_ALL_TESTS();
  gComm.reset();
  return status;
}

} // namespace cbc::test
